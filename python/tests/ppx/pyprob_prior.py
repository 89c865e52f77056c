"""pyprob 1.5.0's RemoteModel draws prior traces from a PPX simulator and
writes each trace's variables as JSON lines (address, value, log_prob,
control, observed): what test_ppx.py compares with our server's log.

usage: pyprob_prior.py ADDRESS TRACES OUT.jsonl
"""

import json
import sys

import pyprob
from pyprob import RemoteModel

address, count, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
pyprob.seed(1)
model = RemoteModel(address)
with open(out, "w") as f:
    for _ in range(count):
        trace = model.get_trace()
        variables = []
        for v in trace.variables:
            value = v.value.reshape(-1)
            variables.append({
                "address": v.address,
                "value": float(value[0]) if value.numel() == 1 else None,
                "size": int(value.numel()),
                "log_prob": float(v.log_prob),
                "control": bool(v.control),
                "observed": bool(v.observed),
            })
        f.write(json.dumps(variables) + "\n")
model.close()
