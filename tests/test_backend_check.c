/* test_backend_check: every refusal of train/backend_check.c, each once,
 * with its full message, on backends that lack what a run asks (copies of
 * the CPU backend and of the fake device with operations taken away: none
 * of the real backends lacks an operation today), and no refusal where the
 * backend has it (the CPU backend and the fake device as they are, for
 * every setting below). The refusals a command line can reach are checked
 * there too (tests/cli_params.sh, cli_device.sh, cli_features.sh,
 * device_placement_body.sh).
 *   test_backend_check   exit 0 pass, 1 fail */
#include <stdio.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/backend_cpu.h"
#include "train/backend_check.h"

static int failures;

/* A run asking for nothing a backend may lack: retrieval, sampled softmax,
 * uniform negatives, host placement, MPI. */
static struct train_conf plain(void)
{
    struct train_conf cf;
    memset(&cf, 0, sizeof cf);
    cf.model.type = MODEL_HSTU;
    cf.task.type = TASK_RETRIEVAL;
    cf.negatives_from = NEG_UNIFORM;
    cf.placement = PLACE_AUTO;
    cf.transport = "auto";
    cf.device_type = "auto";
    cf.precision = PRECISION_FP32;
    cf.features.item = cf.features.event = cf.features.user = "";
    return cf;
}

static void expect(const char *what, const struct backend_ops *be, const struct train_conf *cf,
                   const char *want)
{
    char err[1024] = "";
    const int bad = backend_check(be, cf, err, sizeof err);
    if (!want && bad) {
        printf("FAIL: %s: refused on %s: %s\n", what, be->name, err);
        failures++;
    } else if (want && (!bad || strcmp(err, want) != 0)) {
        printf("FAIL: %s on %s: got '%s', want '%s'\n", what, be->name, bad ? err : "(none)",
               want);
        failures++;
    } else {
        printf("ok: %s on %s%s%s\n", what, be->name, want ? ": " : ": accepted",
               want ? want : "");
    }
}

int main(void)
{
    const struct backend_ops *real[] = {&backend_cpu, &backend_fake};
    /* lacking: the fake device without any of the optional operations */
    struct backend_ops lack = backend_fake;
    lack.gemm_bf16 = NULL;
    lack.softmax_block_lse = NULL;
    lack.softmax_loss_q = NULL;
    lack.hstu_attn_ctx_fwd = NULL;
    lack.sasrec_attn_ctx_fwd = NULL;
    lack.hstu_attn_rows_fwd = NULL;
    lack.ipc_export = NULL;
    struct backend_ops grad_only = backend_fake; /* half of the full softmax */
    grad_only.softmax_block_grad = NULL;
    struct train_conf cf;

    for (int i = 0; i < 2; i++) {
        cf = plain();
        expect("a plain run", real[i], &cf, NULL);
        cf.loss = LOSS_FULL;
        cf.negatives_from = NEG_MIXED;
        cf.split_long.on = 1;
        cf.precision = PRECISION_BF16;
        expect("full, mixed, split_long, bf16", real[i], &cf, NULL);
        cf = plain();
        cf.task.type = TASK_RANKING;
        cf.model.type = MODEL_SASREC;
        expect("ranking", real[i], &cf, NULL);
        cf.model.type = MODEL_HSTU;
        cf.model.last_targets = 1;
        expect("ranking, last_layer targets", real[i], &cf, NULL);
    }
    cf = plain();
    cf.placement = PLACE_DEVICE;
    expect("device placement", &backend_fake, &cf, NULL);
    cf.transport = "kernel";
    expect("device placement, kernel", &backend_fake, &cf, NULL);
    expect("a plain run", &lack, (cf = plain(), &cf), NULL);

    /* the device data flow */
    cf = plain();
    cf.device_type = "cpu";
    cf.staging_direct = 1;
    expect("device.type = cpu, staging direct", &backend_cpu, &cf,
           "device.staging = direct: the cpu backend has no device buffers; use device.type = "
           "cuda or fake, or device.staging = host or auto");
    cf.device_type = "auto"; /* fell back to the CPU: staging is moot */
    expect("device.type = auto on the CPU, staging direct", &backend_cpu, &cf, NULL);
    cf = plain();
    cf.placement = PLACE_DEVICE;
    expect("device placement", &backend_cpu, &cf,
           "embedding.placement = device: the cpu backend has no device memory; use "
           "device.type = cuda (or auto with a GPU) or fake, or embedding.placement = host or "
           "auto");
    cf = plain();
    cf.transport = "copy-engine";
    expect("copy-engine", &backend_cpu, &cf,
           "parallel.transport = copy-engine: the cpu backend has no CUDA IPC; use "
           "parallel.transport = mpi or auto");
    cf.transport = "kernel";
    expect("kernel", &lack, &cf,
           "parallel.transport = kernel: the fake backend has no CUDA IPC; use "
           "parallel.transport = mpi or auto");
    cf = plain();
    cf.placement = PLACE_DEVICE;
    cf.subspace_k = 4;
    expect("subspace, device placement", &backend_fake, &cf,
           "embedding.subspace_k = 4 with embedding.placement = device: a subspace table's rows "
           "F(i) + U c[i] are rebuilt and its gradients projected on the host (emb_subspace.c); "
           "use embedding.placement = host or auto, or embedding.subspace_k = 0");
    cf = plain();
    cf.placement = PLACE_DEVICE;
    cf.features.event = "genre";
    expect("event features, device placement", &backend_fake, &cf, NULL);
    cf.features.item = "genres";
    cf.features.user = "age";
    expect("item and user features, device placement", &backend_fake, &cf, NULL);
    cf.features.item = cf.features.user = cf.features.event = "";
    cf.task.type = TASK_RANKING;
    expect("ranking, device placement", &backend_fake, &cf, NULL);
    cf.features.event = "genre";
    cf.features.dynamic = "genre";
    expect("dynamic features, device placement", &backend_fake, &cf, NULL);
    cf = plain();
    cf.precision = PRECISION_BF16;
    expect("bf16", &lack, &cf,
           "device.precision = bf16: the fake backend has no bf16 GEMM; use device.precision = "
           "fp32 or tf32");
    /* the losses */
    cf = plain();
    cf.loss = LOSS_FULL;
    expect("full softmax", &lack, &cf,
           "train.loss = full: the fake backend has no full softmax; use device.type = cpu");
    expect("full softmax", &grad_only, &cf,
           "train.loss = full: the fake backend has no full softmax; use device.type = cpu");
    cf = plain();
    cf.negatives_from = NEG_IN_BATCH;
    expect("in-batch negatives", &lack, &cf,
           "train.negatives_from = in_batch: the fake backend has no logQ-corrected softmax; use "
           "device.type = cpu, or train.negatives_from = uniform");
    /* context-parallel attention */
    cf = plain();
    cf.split_long.on = 1;
    cf.model.type = MODEL_SASREC;
    expect("split_long", &lack, &cf,
           "parallel.split_long = auto: the fake backend has no context-parallel attention; use "
           "device.type = cpu");
    cf = plain();
    cf.task.type = TASK_RANKING;
    expect("ranking without evaluation", &lack, &cf, NULL);
    cf.eval_every = 1;
    expect("ranking", &lack, &cf,
           "train.task = ranking: the fake backend has no context-parallel attention, which the "
           "evaluation's target mask needs (each candidate attends to its history and itself); "
           "use train.final_eval = off and train.eval_every = 0 (training alone), or "
           "device.type = cpu (doc/gpu.md)");
    cf = plain();
    cf.task.type = TASK_RANKING;
    cf.model.last_targets = 1;
    expect("last_layer targets", &lack, &cf,
           "model.last_layer = targets: the fake backend has no attention over some query rows; "
           "use model.last_layer = full, or device.type = cpu or fake");
    cf.task.type = TASK_RETRIEVAL; /* the losses a ranking run does not have */
    cf.model.last_targets = 0;
    expect("retrieval", &lack, &cf, NULL);
    printf("%s: %d failure%s\n", failures ? "FAIL" : "PASS", failures, failures == 1 ? "" : "s");
    return failures ? 1 : 0;
}
