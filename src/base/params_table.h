/* params_table: THE declarative list of parameters (doc/training.md).
 *
 * One line per parameter; adding a parameter is adding a line here.
 *   X(section, key, type, default, min, max, choices, help)
 * type: INT (int64), FLOAT (double), BOOL (on/off), CHOICE (one of the
 * '|'-separated words in choices), STRING. min/max bound INT and FLOAT
 * (inclusive); choices is NULL for all but CHOICE.
 * Code reads values as params_f64(p, P_train_lr)-style accessors; the enum
 * name is P_<section>_<key>, spelt as in the file (see params.h). Only
 * start-up code reads them: the trainer resolves its configuration once
 * (train/train_conf.c). */
X(data, path, STRING, "", 0, 0, NULL,
  "HDF5 sequence dataset (made by 'freescale data import' or 'data gen')")
X(data, max_seq_len, INT, "200", 2, 1000000, NULL,
  "longest history used; longer sequences keep their most recent events")
X(data, timestamps, BOOL, "on", 0, 1, NULL,
  "use the dataset's /timestamps (time-bucket bias) when it has them")
X(data, split, STRING, "loo", 0, 0, NULL,
  "loo: last event = test, second last = validation; hstu (retrieval): train on all but the "
  "last, validate and test on the last; ranking also: last:K = each user's last K events "
  "test, the K before them validate (last:P% = P% of each user's events, at least 1); "
  "time:T = events at or after T (seconds) test, the window of the same length before T "
  "validates (time:V,T: from V)")
X(data, candidates, INT, "0", 0, 1000000000, NULL,
  "ranking evaluation: at most this many of a user's held-out events are candidates (the "
  "earliest); 0 = all")
X(data, pools, STRING, "", 0, 0, NULL,
  "ranking: build each history from pools of event kinds, NAME:COLUMN[OP X], ... (the syntax "
  "of a binary task; e.g. listen_plus:played_ratio>=50, like:is_like, skip:played_ratio<50): "
  "the last floor(L / K) events of each of the K pools before the cut, in time order, events "
  "in no pool left out (L = data.max_seq_len in training, minus 1 for an evaluated history); "
  "empty = the most recent events (doc/ranking.md)")
X(data, history_files, INT, "0", 0, 1000000, NULL,
  "streaming, data.path a list or glob of window files: a user's history is read from at "
  "most this many files before the window (newest first); 0 = all (doc/data.md)")
X(data, window, STRING, "", 0, 0, NULL,
  "train.schedule = stream: the length of a window, a DURATION: seconds (3600) or a number "
  "with s, m, h, d or w (30m, 1.5h, 1d, 2w), whole seconds")
X(data, stream_start, STRING, "", 0, 0, NULL,
  "train.schedule = stream: the first window's start: seconds since the epoch, an ISO date "
  "(UTC: 2026-11-01, 2026-11-01T06:00) or +DURATION after the first event; empty = the first "
  "event")
X(data, stream_end, STRING, "", 0, 0, NULL,
  "train.schedule = stream: no window starts at or after this time (as data.stream_start); "
  "empty = after the last event")
X(model, type, CHOICE, "hstu", 0, 0, "hstu|sasrec",
  "sequence model: HSTU (Zhai et al. 2024) or SASRec (Kang & McAuley 2018)")
X(model, dim, INT, "50", 1, 65536, NULL, "embedding and model width d")
X(model, layers, INT, "2", 1, 1024, NULL, "number of attention blocks")
X(model, heads, INT, "1", 1, 1024, NULL, "attention heads per block (must divide dim)")
X(model, dropout, FLOAT, "0.2", 0, 0.95, NULL, "dropout probability")
X(model, actions, CHOICE, "sum", 0, 0, "sum|interleave",
  "ranking: how each event's action (its labels and features.event) enters the sequence: "
  "sum = added to the next item's token; interleave = a token of its own after its item "
  "(item, action, item, action, ...); a position never sees its own labels")
X(model, last_layer, CHOICE, "full", 0, 0, "full|targets",
  "ranking with HSTU: full = the last layer computes every token; targets = its queries, "
  "gating and output projection only at the tokens whose outputs are read (the item "
  "positions in training, the candidates in evaluation; keys and values stay full length): "
  "the same outputs and gradients, less work (doc/ranking.md)")
X(model, head, STRING, "128", 0, 0, NULL,
  "ranking: hidden widths of the MLP head over the item positions' outputs (ReLU), "
  "comma-separated; one logit per task after them; empty = a linear head")
X(model, bias, BOOL, "off", 0, 1, NULL,
  "ranking: per-item and per-user terms added to each task's logit (a wide part beside the "
  "head), started at the training labels' smoothed user+item means (train.baseline_prior) "
  "with the head's last layer at 0: the model starts where the user+item baseline ends; the "
  "test (and each stream window) shifts them by what the events before it add to those means")
X(model, recency, STRING, "0", 0, 0, NULL,
  "ranking with model.bias: the half-life in events of a recency-weighted mean of each task's "
  "label residuals (the label less its item's smoothed mean) over the sequence's earlier events, "
  "added to every task's logit through a K x K matrix fitted at start-up on the training "
  "events; 0 = off; auto = the half-life of 1, 2, 4, .., 256 whose start-up fit has the "
  "lowest validation loss (doc/ranking.md)")
X(model, bias_prior, STRING, "", 0, 0, NULL,
  "ranking with model.bias: pseudo-counts of the smoothed means model.bias starts from, one "
  "for the item and the user means or I,U (the item means' I, the user means' U); empty = "
  "train.baseline_prior; auto = the item and the user means' priors among 0.5, 1, 2, .., 128 "
  "whose means have the lowest validation loss (doc/ranking.md)")
X(model, factors, INT, "0", 0, 64, NULL,
  "ranking with model.bias: F > 0 adds a learned interaction of each event's item with the "
  "label residuals of the sequence's earlier events (F factors per item; the user's factor is "
  "the mean of its history's item factors weighted by their residuals less the user's mean "
  "residual), into every task's logit through a K x K matrix started at 0; 0 = off")
X(model, factor_ridge, FLOAT, "0", 0, 1e6, NULL,
  "model.factors: 0 = the user's factor is the shrunk mean above; lambda > 0 = the ridge fit "
  "(lambda I + sum f f^T)^-1 sum (residual - mean) f of the same residuals on the history's "
  "item factors, an F x F solve a token (F <= 16; doc/ranking.md)")
X(model, factor_feature, STRING, "", 0, 0, NULL,
  "model.factors: NAME = a single-valued categorical item feature of the dataset (e.g. an "
  "artist): the factor rows are its values', an item's factors its value's row, trained by the "
  "events of every item with that value; empty = a row per item (doc/ranking.md)")
X(model, factors_lr, STRING, "0", 0, 0, NULL,
  "model.factors: the Adam rate of the factor terms (the items' factors and the K x K matrix), "
  "with train.lr's warmup and schedule; 0 = train.lr; auto = the one of train.lr x 1, 3, 10, "
  "30, 100 with the best validation metric, each a run before training as train.tune's candidates "
  "(doc/ranking.md)")
X(model, calibrate, CHOICE, "off", 0, 0, "off|platt|temperature",
  "ranking: platt = each binary task's logit z mapped to a z + b (a > 0: the order, AUC and "
  "GAUC unchanged), a and b the logistic regression of the labels on z over the validation "
  "events, refitted at every validation and kept in the model (head.calib): the test and "
  "score's probabilities take it; temperature = the same with b = 0 (a alone); off = the "
  "logits as they are (doc/ranking.md)")
X(train, task, CHOICE, "retrieval", 0, 0, "retrieval|ranking",
  "retrieval: the next item against the item table (HR, NDCG); ranking: the labels of each "
  "event (train.tasks) by an MLP head at every item position (AUC, GAUC, NE)")
X(train, tasks, STRING, "", 0, 0, NULL,
  "ranking: the tasks, NAME:binary:COLUMN[OP X][:WEIGHT] (label = COLUMN OP X, or COLUMN != "
  "0; OP one of >= > <= < == !=) or NAME:regression:COLUMN[:WEIGHT] (a float column), "
  "comma-separated; COLUMN = a per-event column /events/COLUMN; e.g. "
  "like:binary:rating>=4,rating:regression:rating:0.5")
X(train, select, STRING, "", 0, 0, NULL,
  "ranking: the validation metric train.keep_best and train.patience follow: TASK.METRIC, "
  "METRIC one of auc, gauc, accuracy, ne, logloss (binary tasks) or mse, mae (regression; "
  "lower is better for ne, logloss, mse, mae); TASK alone = TASK.auc; empty = the first "
  "binary task's AUC")
X(train, tune, CHOICE, "off", 0, 0, "off|lr|dropout|lr,dropout",
  "choose on the run's validation events, before it trains: the learning rates (train.lr, "
  "embedding.lr and a set features.lr and model.factors_lr together x 1/3, 1, 3, 10) and/or "
  "model.dropout (0, 0.2, 0.4, at the chosen rates), each candidate a run of train.tune_epochs with train.patience, "
  "the best validation metric (train.select's) kept (doc/training.md)")
X(train, tune_epochs, INT, "0", 0, 1000000, NULL,
  "train.tune: each candidate's epochs at most (0 = train.epochs)")
X(train, schedule, CHOICE, "epochs", 0, 0, "epochs|stream",
  "epochs = passes over the training users; stream = the events cut into time windows "
  "(data.window), each evaluated (test-then-train) then trained once, in time order "
  "(doc/training.md, Streaming)")
X(train, batch_size, INT, "128", 1, 1000000000, NULL,
  "sequences per step over all ranks (the global batch)")
X(train, epochs, INT, "101", 1, 1000000, NULL, "passes over the training users")
X(train, lr, FLOAT, "1e-3", 1e-12, 100, NULL, "learning rate")
X(train, negatives, INT, "128", 1, 1000000, NULL,
  "retrieval: sampled negatives per position")
X(train, loss, CHOICE, "softmax", 0, 0, "softmax|bce|full",
  "retrieval: sampled softmax over train.negatives negatives (see train.negatives_from), BCE "
  "with one negative, or full = the exact softmax over all items (the sharded table)")
X(train, negatives_from, CHOICE, "uniform", 0, 0, "uniform|in_batch|mixed",
  "where the sampled softmax's negatives come from: uniform over the items; in_batch = the "
  "global batch's targets (with the logQ correction of their frequency in the batch); mixed = "
  "half of each")
X(train, shared_negatives, INT, "0", 0, 1000000, NULL,
  "train.loss = softmax: the positions of each block of this many consecutive positions of a "
  "sequence share one draw of the negatives, so that a block's scores are one GEMM (CPU; "
  "doc/training.md); 0 = a draw per position")
X(train, keep_best, BOOL, "off", 0, 1, NULL,
  "write best.h5 into output.checkpoint_dir whenever the validation metric improves (retrieval: "
  "NDCG@10; ranking: train.select, by default the first binary task's AUC), and report the "
  "test metrics of that checkpoint (also those of the last step)")
X(train, patience, INT, "0", 0, 1000000, NULL,
  "stop after this many validations (train.eval_every) without a better validation metric "
  "(retrieval: NDCG@10; ranking: train.select's) (0 = never)")
X(train, temperature, FLOAT, "0.05", 1e-6, 100, NULL,
  "retrieval: sampled softmax temperature tau")
X(train, weight_decay, FLOAT, "0", 0, 10, NULL, "AdamW weight decay of the dense parameters")
X(train, adam_beta1, FLOAT, "0.9", 0, 0.999999, NULL,
  "AdamW's first-moment decay of the dense parameters (and model.bias's rows); MLPerf DLRMv4: "
  "0.95")
X(train, adam_beta2, FLOAT, "0.98", 0, 0.999999, NULL,
  "AdamW's second-moment decay of the dense parameters (and model.bias's rows); MLPerf DLRMv4: "
  "0.999")
X(train, warmup_steps, INT, "0", 0, 1000000000, NULL, "linear learning-rate warmup (steps)")
X(train, lr_schedule, CHOICE, "constant", 0, 0, "constant|cosine|linear",
  "the learning rates after the warmup, dense and sparse alike: constant, or decayed over the "
  "run's remaining steps (epochs x steps per epoch, or train.max_steps) to 0 along a half "
  "cosine or a line; a function of the step alone (a resumed run takes the same rates)")
X(train, clip_norm, FLOAT, "0", 0, 1e6, NULL, "clip the dense gradient's global norm (0 = off)")
X(train, max_steps, INT, "0", 0, 1000000000000.0, NULL, "stop after this many steps (0 = no limit)")
X(train, final_eval, BOOL, "on", 0, 1, NULL,
  "evaluate validation and test after the last step (off: benchmarks of training alone)")
X(train, eval_every, INT, "0", 0, 1000000, NULL,
  "evaluate every N epochs (0 = only at the end)")
X(train, resume, STRING, "", 0, 0, NULL,
  "checkpoint of this run's identity to continue from (any rank count); auto = this run's "
  "newest complete checkpoint "
  "in output.checkpoint_dir (by write order), if any; empty = start afresh")
X(train, checkpoint_every, INT, "0", 0, 1000000000, NULL,
  "write a checkpoint every N steps into output.checkpoint_dir (0 = only at the end; "
  "train.schedule = stream: every N windows, 0 = after every window)")
X(train, log_every, INT, "10", 1, 1000000000, NULL, "progress line every N steps")
X(train, baseline, BOOL, "off", 0, 1, NULL,
  "also evaluate baselines on the test split: retrieval: the most popular items (counts of "
  "the training events); ranking: smoothed means of the labels before the test events "
  "(global, item, user, additive user+item)")
X(train, baseline_prior, FLOAT, "5", 0, 1e9, NULL,
  "ranking baselines: pseudo-counts of the smoothed means (an item's mean = (sum + prior x "
  "global) / (count + prior))")
X(train, nonfinite, CHOICE, "stop", 0, 0, "stop|skip",
  "a step whose global loss or dense gradient is not finite: stop = end the run naming the "
  "step (no checkpoint of that state); skip = drop the step's update and count it")
X(train, exact_sums, BOOL, "off", 0, 1, NULL,
  "order-independent gradient and loss sums: the same bits on any number of ranks (each "
  "sample's dense gradient and each token's row gradient added as integers; costs step time "
  "and gradient bytes, doc/training.md; the CPU backend)")
X(train, seed, INT, "42", 0, 9007199254740992.0, NULL,
  "seed of every random choice (init, permutation, negatives, dropout)")
X(train, follow, BOOL, "off", 0, 1, NULL,
  "streaming (train.schedule = stream, data.path ending in a glob): after the last file, wait "
  "for the next one the glob matches, complete (renamed into place, or its attribute complete "
  "set), and train its windows; ends at data.stream_end, train.follow_timeout or a signal "
  "(doc/training.md)")
X(train, follow_timeout, STRING, "0", 0, 0, NULL,
  "train.follow: end the run when no new file came for this long: seconds or 30s, 10m, 1h, 2d, 2w; "
  "0 = wait forever")
X(eval, max_events, INT, "50000", 0, 1000000000, NULL,
  "train.schedule = stream: at most this many events of a window are evaluated (whole users "
  "in an order keyed by train.seed and the window, the last one cut; the same on any rank "
  "count); 0 = all")
X(embedding, optimizer, CHOICE, "adagrad", 0, 0, "sgd|adagrad|adam",
  "sparse optimizer of the tables: SGD, row-wise Adagrad, lazy Adam")
X(embedding, init_std, FLOAT, "0.02", 0, 10, NULL, "standard deviation of the initial rows")
X(embedding, lr, FLOAT, "0.01", 1e-12, 100, NULL, "learning rate of the sparse optimizer")
X(embedding, weight_decay, FLOAT, "0", 0, 1, NULL,
  "weight decay of the tables (L2 for sgd/adagrad, decoupled for adam)")
X(embedding, placement, CHOICE, "auto", 0, 0, "auto|host|device",
  "where each rank's shard and its optimizer state live: host memory, or device memory, where "
  "the ids, rows and gradients of the exchanges stay (de-duplication, gathers, codecs, sums and "
  "the sparse update on the device; the CUDA backend or the fake device; not yet verified on a "
  "GPU); auto = device when the run is one device placement takes and the shard, its state and "
  "the step's workspace fit in half of the device's free memory, else host (doc/gpu.md)")
X(embedding, cache, STRING, "0", 0, 0, NULL,
  "a device cache of hot rows over the host-placed item table and its sharded feature tables "
  "(embedding.placement = host or "
  "auto, a device backend; doc/embedding.md): ROWS per shard, or a FRACTION of the shard's "
  "rows (0.1); "
  "rows and their optimizer state fetched on a miss, least recently used rows written back; "
  "with parallel.overlap = prefetch filled for step t+1 during step t; with placement = auto: "
  "device when the whole shard fits, else the cache when it fits, else host; 0 = none")
X(embedding, cache_policy, CHOICE, "lru", 0, 0, "lru|lfu",
  "the eviction order of embedding.cache: lru = the least recently used row first, lfu = the "
  "least often used since it was fetched (counts halved every 64 steps); ties by id, the "
  "smaller first; the rows of a step and of the step before are never evicted")
X(embedding, subspace_k, INT, "0", 0, 65536, NULL,
  "subspace-factorised item table (doc/compression.md): rows F(i) + U c[i] with F fixed "
  "pseudo-random, U a fixed d x k orthonormal basis, c[i] of k values stored and trained; the "
  "exchanges carry k values per row (a model change; host placement; checkpoints store c and "
  "resume with the same k, basis and seed); 0 = a plain table")
X(embedding, subspace_basis, CHOICE, "random", 0, 0, "random|identity",
  "test hook: identity = U the first k unit vectors and F = 0 (k = dim is the plain table)")
X(embedding, dynamic, BOOL, "off", 0, 1, NULL,
  "a dynamic item table (doc/embedding.md, \"Dynamic tables\"): a hash table from raw id to a "
  "row per shard (owner: a 64-bit mix of the id mod the group size), rows made on first use "
  "(embedding.admit), evicted by embedding.evict, at most embedding.capacity (host or device "
  "memory: embedding.placement)")
X(embedding, capacity, INT, "0", 0, 1e18, NULL,
  "dynamic tables: at most this many rows over all shards (each shard its share); 0 = unbounded")
X(embedding, admit, INT, "1", 1, 65535, NULL,
  "dynamic tables: an id gets a row at the N-th training step that looks it up; until then "
  "it gets the table's shared, trained unadmitted row")
X(embedding, evict, STRING, "none", 0, 0, NULL,
  "dynamic tables: none; ttl:S = rows not looked up for S steps go; lru / lfu = when a shard "
  "is full, the least recently / frequently used rows go (ties: smaller id first)")
X(features, item, STRING, "", 0, 0, NULL,
  "item features of the dataset (/items/NAME), comma-separated: each one's rows (pooled over "
  "its values: features.pooling) are added to the item's token and to its output "
  "representation (the loss, evaluation, recommend and export score items with them)")
X(features, event, STRING, "", 0, 0, NULL,
  "event features of the dataset (/events/NAME), comma-separated: each one's row is added to "
  "its event's token")
X(features, user, STRING, "", 0, 0, NULL,
  "user features of the dataset (/users/NAME), comma-separated: each one becomes a contextual "
  "token in front of the user's sequence (never a loss target); id (without a /users/id): the "
  "user id, a table of one row per user")
X(features, placement, CHOICE, "auto", 0, 0, "auto|replicated|sharded",
  "where each feature table lives: replicated on every rank (its gradient summed over the "
  "ranks) or row-sharded over the embedding group like the item table (one exchange for all "
  "sharded feature tables); auto = replicated up to features.replicate_below values")
X(features, replicate_below, INT, "1048576", 0, 1e15, NULL,
  "features.placement = auto: a table of at most this many values (rows x width) is "
  "replicated, a larger one sharded")
X(features, dim, INT, "0", 0, 65536, NULL,
  "width of the feature tables (0 = model.dim); another width is projected to model.dim by a "
  "learned matrix (trained like a replicated table)")
X(features, dims, STRING, "", 0, 0, NULL,
  "per-feature widths NAME:WIDTH,... overriding features.dim")
X(features, dynamic, STRING, "", 0, 0, NULL,
  "features whose tables are dynamic (comma-separated names; sharded, with "
  "embedding.capacity, admit and evict as the item table's)")
X(features, cross, STRING, "", 0, 0, NULL,
  "ranking: hashed crosses, NAME:KEY*KEY[*KEY..]:ROWS, ... (KEY: user, item, hour, an /items "
  "or /events column); each a per-event feature of ROWS rows added to its event's own item "
  "token: row xxh64(the keys as little-endian int64) mod ROWS (MLPerf DLRMv4's "
  "user_x_artist:user*artist_id:100000000; doc/ranking.md)")
X(features, pooling, CHOICE, "sum", 0, 0, "sum|mean",
  "how the rows of a multi-valued feature's values are pooled (a value 0 is missing: no row)")
X(features, optimizer, CHOICE, "same", 0, 0, "same|sgd|adagrad|adam",
  "sparse optimizer of the feature tables and projections (same = embedding.optimizer)")
X(features, lr, FLOAT, "0", 0, 100, NULL,
  "learning rate of the feature tables and projections (0 = embedding.lr)")
X(parallel, balance, CHOICE, "kk", 0, 0, "none|lpt|kk",
  "assign each global batch's sequences to ranks by predicted cost: none (equal "
  "contiguous shares), lpt (greedy), kk (Karmarkar-Karp)")
X(parallel, balance_equal_count, BOOL, "off", 0, 1, NULL,
  "keep equal sequence counts per rank while balancing cost")
X(parallel, balance_adapt, BOOL, "off", 0, 1, NULL,
  "weight each rank's share by its measured speed (slow ranks get less work)")
X(parallel, cost_model, STRING, "auto", 0, 0, NULL,
  "sequence cost c(L) = c0 + a L + b L^2 as 'c0,a,b'; auto = from the model's FLOP counts")
X(parallel, embedding_group, INT, "0", 0, 1000000, NULL,
  "ranks per embedding shard group (must divide the rank count; 0 = all ranks)")
X(parallel, overlap, CHOICE, "prioritized", 0, 0, "none|pipeline|prioritized|prefetch",
  "embedding communication: none = blocking; pipeline = the next batch is read and its id "
  "exchange runs during this step's compute; prioritized = pipeline + rows in two chunks "
  "(inputs first), sparse gradients before the dense all-reduce, dense all-reduce bucketed "
  "per layer during the backward; prefetch = prioritized + the next step's rows that this "
  "step's update does not touch are served during this step's backward, the colliding ones "
  "right after the update (exact: the same losses)")
X(parallel, rows_codec, CHOICE, "fp32", 0, 0, "fp32|bf16|fp16|fp8|int8",
  "wire format of the embedding rows owners send back (doc/compression.md): fp32 as they "
  "are; bf16; fp16 with a power-of-two scale per row; fp8 (e4m3) with a scale per row; int8 "
  "with a scale and offset per row (every row is encoded, those a rank serves itself too)")
X(parallel, grads_codec, CHOICE, "fp32", 0, 0, "fp32|bf16|fp16|fp8|int8",
  "wire format of the embedding gradients requesters send to the owners (as rows_codec; "
  "fp16's per-row scale keeps small gradients from underflowing)")
X(parallel, progress, CHOICE, "test", 0, 0, "test|thread",
  "what moves non-blocking exchanges while the model computes: test = MPI_Test between "
  "layers; thread = a thread polling MPI's progress engine during compute")
X(parallel, transport, CHOICE, "auto", 0, 0, "auto|mpi|copy-engine|kernel",
  "how device buffers move within a node: mpi; copy-engine = CUDA IPC with cudaMemcpyAsync "
  "(no SMs) for the dense gradient all-reduce and the rows and gradients of device tables; "
  "kernel = a copy kernel over the same mappings; auto = copy-engine for the dense all-reduce "
  "on the CUDA backend with several ranks on a node, else mpi; the CPU backend has only mpi")
X(parallel, split_long, CHOICE, "off", 0, 0, "off|auto",
  "auto: a sequence whose predicted cost exceeds parallel.split_threshold is cut into "
  "chunks of equal cost on several ranks (context-parallel attention, HSTU and SASRec)")
X(parallel, split_threshold, FLOAT, "0", 0, 1e300, NULL,
  "predicted cost above which split_long cuts a sequence, in the cost model's units; 0 = "
  "parallel.split_fraction x the step's mean cost per rank")
X(parallel, split_fraction, FLOAT, "0.5", 0.01, 1, NULL,
  "with split_threshold = 0: the threshold as a fraction of the step's mean cost per rank")
X(parallel, split_kv_cost, STRING, "auto", 0, 0, NULL,
  "predicted cost of one key/value row a chunk receives from an earlier chunk (cost model "
  "units); auto = moving its 16 d bytes per layer at 10 FLOPs per byte")
X(parallel, timeout, INT, "300", 0, 1000000, NULL,
  "watchdog: a rank that makes no progress (no phase, collective or write completed) for "
  "this many seconds prints its step, phase and the collective it waits in, and aborts the "
  "job (0 = off)")
X(device, type, CHOICE, "auto", 0, 0, "auto|cpu|cuda|fake",
  "where the dense model runs: auto = CUDA when compiled in and a GPU is visible, else the "
  "CPU; fake = the fake device, a test backend (the CPU's operations behaving like a discrete "
  "GPU: guarded memory, deferred copies; doc/gpu.md)")
X(device, share, BOOL, "off", 0, 1, NULL,
  "allow ranks of a node to share a device (the ranks compare device identities; for tests "
  "and small runs)")
X(device, precision, CHOICE, "fp32", 0, 0, "fp32|tf32|bf16",
  "the dense GEMMs: fp32; tf32 = cuBLAS TF32 tensor cores (~1e-3 relative error; fp32 on the "
  "CPU); bf16 = operands rounded to bf16, fp32 accumulation (cuBLAS GemmEx; the CPU emulates "
  "it). Norms, softmax, losses, reductions, weights, optimizer state and embedding tables "
  "stay fp32 (doc/gpu.md)")
X(device, tf32, BOOL, "off", 0, 1, NULL,
  "deprecated alias: on = device.precision=tf32, off = fp32 (a warning; contradicting "
  "device.precision is an error)")
X(device, peak_tflops, FLOAT, "0", 0, 1e6, NULL,
  "the peak rate of one rank's device (or cores) in TFLOP/s that MFU is reported against "
  "(0 = measured at start-up: a short gemm at the run's threads and device.precision)")
X(device, staging, CHOICE, "auto", 0, 0, "auto|host|direct",
  "exchanges of device buffers: direct = device pointers to MPI (needs CUDA-aware MPI), "
  "host = through pinned host buffers, auto = direct when MPI is CUDA-aware")
X(output, checkpoint_dir, STRING, "", 0, 0, NULL,
  "directory for checkpoints ckpt-STEP.h5 (empty = no checkpoints; created if missing); it "
  "belongs to one run: one holding another run's checkpoints is refused, and so is a fresh "
  "run (train.resume empty) where an earlier start of this run wrote checkpoints")
X(output, checkpoint_delta_every, INT, "0", 0, 1000000000, NULL,
  "dynamic tables: every K steps between full checkpoints (train.checkpoint_every, a "
  "multiple of K), DIR/delta-STEP.h5 with only the dynamic tables' rows used and ids evicted "
  "since the checkpoint before (train.resume = a delta reads its chain); 0 = none")
X(output, keep_checkpoints, INT, "0", 0, 1000000, NULL,
  "keep only this run's N newest checkpoints in output.checkpoint_dir, deleting older ones "
  "once a newer one is complete (0 = keep all)")
X(output, shared_dir, BOOL, "off", 0, 1, NULL,
  "on: write into an output.checkpoint_dir that holds other runs' checkpoints (they are never "
  "resumed from, deleted nor overwritten; train.keep_best is refused where best.h5 is another "
  "run's)")
X(output, checkpoint_write, CHOICE, "collective", 0, 0, "collective|gathered",
  "how checkpoints are written: collective = every rank writes its share of the table rows "
  "into the one file through MPI-IO; gathered = the rows go to rank 0, which writes alone "
  "(the former path, kept for comparison: bench/ckpt.sh)")
X(output, metrics, STRING, "", 0, 0, NULL, "JSON-lines metrics file (empty = none)")
X(output, trace, STRING, "", 0, 0, NULL,
  "Chrome trace-event JSON of the phases of every rank (open in Perfetto); empty = none")
X(output, trace_steps, INT, "20", 1, 100000, NULL, "steps recorded in output.trace")
X(output, trace_peers, BOOL, "off", 0, 1, NULL,
  "on: output.trace also records, per peer and per chunk of every embedding transfer, when "
  "it was posted, seen complete and consumed (host tables then exchange per peer instead of "
  "by all-to-all; doc/overlap.md)")
X(debug, slow_rank, STRING, "", 0, 0, NULL,
  "test hook R:FACTOR: rank R computes FACTOR times slower (to exercise balance_adapt)")
X(debug, nan_step, INT, "0", 0, 1000000000000.0, NULL,
  "test hook: the loss of this step (as numbered in the progress lines) becomes NaN (0 = off)")
X(debug, node_size, INT, "0", 0, 1000000, NULL,
  "test hook: count the bytes to other nodes as if nodes held this many consecutive ranks "
  "(0 = the real nodes)")
X(debug, nan_in, CHOICE, "loss", 0, 0, "loss|sparse|bias",
  "test hook: where debug.nan_step puts its NaN: the loss, one embedding gradient of rank 0, "
  "or one gradient of the model.bias rows rank 0 owns")
X(debug, full_logits, INT, "0", 0, 1000000000000.0, NULL,
  "test hook: train.loss = full scores blocks of at most this many logits (0 = 4Mi on the "
  "CPU; a device takes several blocks at a time, from its free memory): small values make "
  "tiny data take the blocked paths")
X(debug, split_chunks, INT, "0", 0, 64, NULL,
  "test hook: with split_long = auto, cut every sequence into this many chunks (at least "
  "one position each), whatever its cost")
X(debug, bias_dense, BOOL, "off", 0, 1, NULL,
  "test hook: model.bias's tables as dense parameters replicated on every rank, all-reduced "
  "and updated whole every step (the former way, kept for comparison), not rows sharded over "
  "the ranks")
X(debug, terms_only, BOOL, "off", 0, 1, NULL,
  "ranking with model.bias: the logits are the terms of model.bias, model.recency and "
  "model.factors alone (and the head's last constant): the head's output, the sequence "
  "model's part, is left out and no gradient reaches it (the sequence model still runs): "
  "the ablation of doc/quality.md")
X(debug, rank_dump, STRING, "", 0, 0, NULL,
  "ranking: write every evaluation's (task, user, label, score) rows to PREFIX-SPLIT.csv "
  "(rank 0; the exact metrics can be recomputed from them)")
X(debug, checkpoint_block, INT, "0", 0, 1000000000000.0, NULL,
  "test hook: bytes of a table part each rank moves per round when checkpoint rows are "
  "written or read (0 = 16 MiB); small values make a small table take many rounds")
X(debug, hang_rank, STRING, "", 0, 0, NULL,
  "test hook R:STEP: rank R stops making progress (sleeps) at step STEP (the watchdog's test)")
X(debug, signal_rank, STRING, "", 0, 0, NULL,
  "test hook R:STEP: rank R sends itself SIGTERM during step STEP, as a preemption would "
  "(the run stops after that step with a checkpoint)")
