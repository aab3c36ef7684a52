#!/usr/bin/python3
"""rank_truncate: a dataset without each user's test events, and the test
events as pairs, for checking `freescale score` against the evaluation.

    rank_truncate.py IN.h5 OUT.h5 PAIRS.csv last:K|last:P%

OUT.h5 keeps every user, item and map of IN.h5 (so ids and num_items are
unchanged) and, per user, the events before the test split of data.split
(the last K, or floor(P% of the user's events), at least 1); PAIRS.csv gets
user,item,time of the test events in original ids (and LABELS.csv beside it
the events' /events columns, for the AUC).
"""
import sys

import h5py
import numpy as np


def main(src, dst, pairs, split):
    f = h5py.File(src, "r")
    off = f["offsets"][:]
    L = np.diff(off)
    spec = split.split(":", 1)[1]
    if spec.endswith("%"):
        K = np.maximum(1, np.floor(float(spec[:-1]) * L / 100.0).astype(np.int64))
    else:
        K = np.full(len(L), int(spec))
    K = np.minimum(K, L)
    keep = np.concatenate([np.arange(off[u], off[u + 1] - K[u]) for u in range(len(L))])
    test = np.concatenate([np.arange(off[u + 1] - K[u], off[u + 1]) for u in range(len(L))])
    users_of = np.repeat(np.arange(len(L)), L)
    with h5py.File(dst, "w") as g:
        for k, v in f.attrs.items():
            g.attrs[k] = v
        noff = np.concatenate([[0], np.cumsum(L - K)])
        g["offsets"] = noff.astype(np.int64)

        def copy(name, obj):
            if not isinstance(obj, h5py.Dataset) or name == "offsets":
                return
            ev = name in ("item_ids", "timestamps", "actions") or name.startswith("events/")
            data = obj[:][keep] if ev else obj[:]
            d = g.create_dataset(name, data=data)
            for k, v in obj.attrs.items():
                d.attrs[k] = v

        f.visititems(copy)
        for name, grp in f.items():  # group attributes (cardinality of CSR features)
            if isinstance(grp, h5py.Group):
                for sub, obj in grp.items():
                    if isinstance(obj, h5py.Group):
                        for k, v in obj.attrs.items():
                            g[f"{name}/{sub}"].attrs[k] = v
    umap = f["user_map"][:] if "user_map" in f else np.arange(len(L))
    imap = f["item_map"][:] if "item_map" in f else np.arange(1, f.attrs["num_items"] + 1)
    items = f["item_ids"][:][test]
    ts = f["timestamps"][:][test]
    with open(pairs, "w") as out:
        out.write("user,item,time\n")
        for u, i, t in zip(users_of[test], items, ts):
            out.write(f"{umap[u]},{imap[i - 1]},{t}\n")
    cols = sorted(k for k in f["events"]) if "events" in f else []
    with open(pairs.replace(".csv", "") + "-labels.csv", "w") as out:
        out.write(",".join(cols) + "\n")
        vals = [f["events"][c][:][test] for c in cols]
        for row in zip(*vals):
            out.write(",".join(repr(float(v)) for v in row) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 5:
        raise SystemExit(__doc__)
    main(*sys.argv[1:])
