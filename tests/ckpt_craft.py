#!/usr/bin/python3
# ckpt_craft.py GOOD.h5 OUTDIR: well-formed HDF5 files that are not shaped
# like a freescale checkpoint, made from a good one with h5py. Writes
# OUTDIR/NAME.h5 for each case and prints "NAME<TAB>expected message" lines
# (the part of the refusal that names the object), for cli_ckpt_bad.sh.
import shutil
import sys

import h5py
import numpy as np

good, out = sys.argv[1], sys.argv[2]
cases = []


def case(name, expect):
    def wrap(fn):
        path = "%s/%s.h5" % (out, name)
        shutil.copy(good, path)
        with h5py.File(path, "r+") as f:
            fn(f)
        cases.append((name, expect))
        return fn
    return wrap


def set_attr(f, key, value):
    del f.attrs[key]
    f.attrs[key] = value


def replace(f, name, data, **kw):
    del f[name]
    f.create_dataset(name, data=data, chunks=True, fletcher32=True, **kw)


INT_ATTRS = ["version", "num_items", "model_type", "dim", "layers", "heads", "max_seq_len",
             "time_bias", "emb_optimizer", "step", "adam_t", "best_epoch"]

# an array where a scalar belongs: every attribute the reader uses
for key in INT_ATTRS:
    case("array_" + key, "attribute '%s' has shape [2], expected a scalar" % key)(
        lambda f, k=key: set_attr(f, k, np.array([f.attrs[k]] * 2, dtype=np.int64)))
case("array_best_val", "attribute 'best_val' has shape [2], expected a scalar")(
    lambda f: set_attr(f, "best_val", np.array([0.5, 0.5])))
case("array_format", "attribute 'format' has shape [3], expected a scalar")(
    lambda f: set_attr(f, "format", np.array([b"freescale-ckpt"] * 3)))
# the wrong class or size
case("int_format", "attribute 'format' has type int64, expected a string")(
    lambda f: set_attr(f, "format", np.int64(7)))
case("float_step", "attribute 'step' has type float64, expected an integer")(
    lambda f: set_attr(f, "step", np.float64(2.0)))
case("string_dim", "attribute 'dim' has type string, expected an integer")(
    lambda f: set_attr(f, "dim", "16"))
case("string_best_val", "attribute 'best_val' has type string, expected a float")(
    lambda f: set_attr(f, "best_val", "0.5"))
case("long_format", "attribute 'format' is too long")(
    lambda f: set_attr(f, "format", "freescale-ckpt" * 20))
case("wrong_format", "attribute 'format' is 'freescale-seq', expected 'freescale-ckpt'")(
    lambda f: set_attr(f, "format", "freescale-seq"))
case("missing_format", "missing attribute 'format'")(lambda f: f.attrs.__delitem__("format"))
case("missing_step", "missing attribute 'step'")(lambda f: f.attrs.__delitem__("step"))
# out of range
case("version_3", "version 3, this program reads versions 1 to 2")(
    lambda f: set_attr(f, "version", np.int64(3)))
case("negative_step", "attribute 'step' = -5 is out of range")(
    lambda f: set_attr(f, "step", np.int64(-5)))
case("huge_step", "attribute 'step' = 4611686018427387904 is out of range")(
    lambda f: set_attr(f, "step", np.int64(1 << 62)))
case("overflowing_step", "attribute 'step' = 9223372036854775813 does not fit int64")(
    lambda f: set_attr(f, "step", np.uint64((1 << 63) + 5)))
case("adam_t_past_step", "attribute 'adam_t' = 99 is out of range [0, 2]")(
    lambda f: set_attr(f, "adam_t", np.int64(99)))
case("negative_adam_t", "attribute 'adam_t' = -1 is out of range")(
    lambda f: set_attr(f, "adam_t", np.int64(-1)))
case("best_epoch_-7", "attribute 'best_epoch' = -7 is out of range")(
    lambda f: set_attr(f, "best_epoch", np.int64(-7)))
case("nan_best_val", "attribute 'best_val' = nan is not -1 or an NDCG")(
    lambda f: set_attr(f, "best_val", np.float64("nan")))
case("other_dim", "model.dim = 17 in the checkpoint, 16 in this run")(
    lambda f: set_attr(f, "dim", np.int64(17)))
case("negative_num_items", "num_items of the dataset = -200 in the checkpoint")(
    lambda f: set_attr(f, "num_items", np.int64(-200)))


# datasets: rank, class, shape, values
def first_dense(f, group="dense"):
    return "%s/%s" % (group, sorted(f[group])[0])


def dense_2d(f):
    n = first_dense(f)
    replace(f, n, f[n][()].reshape(1, -1))


def weight_1d(f):
    replace(f, "emb/items/weight", f["emb/items/weight"][()].reshape(-1))


def weight_int(f):
    replace(f, "emb/items/weight", f["emb/items/weight"][()].astype(np.int32))


def weight_rows(f):
    replace(f, "emb/items/weight", f["emb/items/weight"][()][:-1])


def weight_cols(f):
    replace(f, "emb/items/weight", np.zeros((201, 3), dtype=np.float32))


def weight_inf(f):
    f["emb/items/weight"][5, 0] = np.inf


def dense_nan(f):
    n = first_dense(f, "dense_m")
    v = f[n][()]
    v[0] = np.nan
    f[n][...] = v


def state_3d(f):
    replace(f, "emb/items/state", f["emb/items/state"][()].reshape(201, -1, 1))


def no_checksum(f):
    n = first_dense(f)
    v = f[n][()]
    del f[n]
    f.create_dataset(n, data=v)


def dense_group_is_dataset(f):
    del f["dense_v"]
    f.create_dataset("dense_v", data=np.zeros(4, dtype=np.float32), chunks=True, fletcher32=True)


case("dense_rank2", "has rank 2, expected 1")(dense_2d)
case("weight_rank1", "dataset /emb/items/weight has rank 1, expected 2")(weight_1d)
case("weight_int", "dataset /emb/items/weight is integer of 4 bytes, expected float")(weight_int)
case("weight_rows", "dataset /emb/items/weight has 200 in dimension 0, expected 201")(weight_rows)
case("weight_cols", "dataset /emb/items/weight has 3 in dimension 1, expected 16")(weight_cols)
case("weight_inf", "dataset /emb/items/weight: value inf at row 5 is not finite")(weight_inf)
case("dense_m_nan", "is not finite")(dense_nan)
case("state_rank3", "dataset /emb/items/state has rank 3, expected 2")(state_3d)
case("no_checksum", "has no checksum (Fletcher-32 filter)")(no_checksum)
case("missing_state", "missing dataset /emb/items/state")(
    lambda f: f.__delitem__("emb/items/state"))
case("missing_dense_v", "missing group /dense_v")(lambda f: f.__delitem__("dense_v"))
case("dense_v_dataset", "group /dense_v cannot be listed")(dense_group_is_dataset)

for name, expect in cases:
    print("%s\t%s" % (name, expect))
