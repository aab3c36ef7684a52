"""The record files that tests/test_loss.c and tests/test_loss_full.c write
for the PyTorch oracles (torch_loss.py, torch_loss_full.py): records of
(uint8 name length, name, one type byte f|d|q, int64 count, count values),
little-endian."""
import struct

import numpy as np

DTYPES = {b"f": np.float32, b"d": np.float64, b"q": np.int64}


def read_records(path):
    """name -> numpy array"""
    out = {}
    with open(path, "rb") as f:
        data = f.read()
    at = 0
    while at < len(data):
        n = data[at]
        name = data[at + 1:at + 1 + n].decode()
        at += 1 + n
        dt = DTYPES[data[at:at + 1]]
        (count,) = struct.unpack_from("<q", data, at + 1)
        at += 9
        size = np.dtype(dt).itemsize * count
        out[name] = np.frombuffer(data[at:at + size], dtype=dt).copy()
        at += size
    return out
