#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""ncclrr_gen.py - turn the API description (formats/api/*.api) into code.

The description language is documented in formats/api/README.md.
api_model.py parses it into a typed model (Api -> Domain/Fn/Arg/Enum);
one emitter per consumer turns the model into that consumer's code:

  --emit encoders   nrr_api_gen.h, nrr_api_gen.c: function ids, the schema
                    text carried by every trace, typed record encoders
  --emit list       one line per function: domain name nargs flags
  --emit schema     the schema text alone
  --emit lttng      nrr_lttng_gen.h, nrr_lttng_gen.c: LTTng-UST providers
                    ncclrr_<domain> and nrr_lt_<fn>_enter/_leave(), in the
                    table nrr_lt_ops_get() returns
  --emit replay     nrr_replay_gen.h, nrr_replay_gen.c: call thunks and
                    out-readers of the cuda_driver, nvml and verbs
                    functions for the replay engine (replayer/engine/rcuda.c)
  --emit cudart-errors  nrr_cudart_errors_gen.h: the cudaError_t codes and
                    names, for ncclrr's CUDA runtime (replayer/fake/)
  --emit fake-cuda  nrr_fake_cuda_table.h, libcuda.map, nrr_fake_cuda_errors.h,
                    nrr_fake_cuda_entry.h/.c: the fake driver's
                    cuGetProcAddress table (since=, entry lines), its
                    version script, its CUresult names and messages and its
                    entry points' preambles (replayer/fake/)
  --emit fake-nvml  libnvidia-ml.map, nrr_fake_nvml_errors.h,
                    nrr_fake_nvml_entry.h/.c: the fake NVML's version
                    script (fake, entry lines), nvmlReturn_t's names and
                    messages, and its entry points' preambles
  --emit semantics  nrr_sem_gen.c: each function's call semantics (role=,
                    arg=, notready=, transient=, poll=, conv lines) as
                    its schema's sem= attribute, the fallback for traces
                    whose schema lacks them
  --emit benign     nrr_benign_gen.c: the failures a healthy run has too
                    (benign=), for nrr_call_benign() (formats/callfmt.c)
  --emit wrappers   nrr_wrap_gen.h, nrr_wrap_gen.c, nrr_lt_ops_gen.h: the
                    tracer's interposer wrappers and name table, and the
                    table type of its LTTng provider (tracer/)

Emitters live in emit_encoders.py (encoders, list, schema), emit_lttng.py,
emit_replay.py, emit_semantics.py (semantics, benign), emit_wrappers.py and
emit_fake.py (what replayer/fake/ takes from the description);
emit_c.py holds the C text the emitters share. An emitter reads the
model and writes files; it adds no rule of its own about the API.
"""
import argparse
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree

from api_model import ApiError, parse_files, resolve  # noqa: E402
from emit_encoders import emit_encoders, emit_list, emit_schema  # noqa: E402
from emit_fake import emit_cudart_errors, emit_fake_cuda, emit_fake_nvml, emit_fake_verbs  # noqa: E402
from emit_lttng import emit_lttng  # noqa: E402
from emit_replay import emit_replay  # noqa: E402
from emit_semantics import emit_benign, emit_semantics  # noqa: E402
from emit_wrappers import emit_wrappers  # noqa: E402

EMITTERS = {'semantics': emit_semantics, 'benign': emit_benign, 'cudart-errors': emit_cudart_errors, 'encoders': emit_encoders, 'list': emit_list, 'schema': emit_schema, 'lttng': emit_lttng,
            'wrappers': emit_wrappers, 'replay': emit_replay, 'fake-cuda': emit_fake_cuda,
            'fake-nvml': emit_fake_nvml,
            'fake-verbs': emit_fake_verbs}


def main():
    ap = argparse.ArgumentParser(description='Generate code from the ncclrr API description.')
    ap.add_argument('--out-dir', default='.')
    ap.add_argument('--emit', choices=sorted(EMITTERS), required=True)
    ap.add_argument('files', nargs='+')
    o = ap.parse_args()
    try:
        api = resolve(parse_files(o.files))
        EMITTERS[o.emit](api, o.out_dir)
    except ApiError as e:
        print(f'ncclrr_gen: {e}', file=sys.stderr)
        return 1
    except OSError as e:
        print(f'ncclrr_gen: cannot read or write: {e}', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
