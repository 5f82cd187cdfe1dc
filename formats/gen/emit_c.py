# SPDX-License-Identifier: MIT
"""emit_c.py - C text shared by the emitters: string literals, parameter
lists, how a recorded argument and a result become C expressions, and
write() (leaves an unchanged output untouched, so nothing rebuilds).
"""
from api_model import *  # noqa: F401,F403 (the model and its helpers)


# ---------------------------------------------------------------- encoders

def c_string(text):
    lines = []
    for line in text.split('\n')[:-1]:
        lines.append('"' + line.replace('\\', '\\\\').replace('"', '\\"') + '\\n"')
    return '\n\t'.join(lines)


def params_c(fn):
    return ', '.join(f'{a.ctype} {a.name}' for a in fn.args)


def field_value(api, fn, a, when):
    """How arg a is recorded at enter/leave, shared by every emitter that
    records values (encoders, lttng).  Returns (prep, wire, value): wire
    'U'/'S' with value the C expression of the integer (uint64_t/int64_t),
    or wire 'B' with value (ptr, len): the names of the locals the prep
    lines set to the bytes and their full length."""
    if a.result:   # a "result" line: read from the object the call returned
        return [], 'U', f'nrr_ret ? (uint64_t){a.result}((const void *)nrr_ret) : 0'
    # the pointee is read at leave, and at enter too for an inout pointer
    out = when == 'leave' or (a.dir == 'inout' and a.is_ptr and WIRE[a.fmt] != 'B')
    val = a.name
    stars = norm_type(a.ctype).count('*')
    if out and a.base == 'void' and stars == 1:   # untyped out pointer: read what the format says
        val = f'(*(const {"int" if WIRE[a.fmt] == "S" else "uint64_t"} *){a.name})'
    elif out and a.fmt == 'x' and stars == 1 and a.base not in api.scalars:
        val = a.name   # an out struct recorded by its address
    elif out:
        val = f'(*{a.name})'
    guard = f'{a.name} ? ' if out else ''
    prep = []
    w = WIRE[a.fmt]
    if w == 'U':
        return prep, w, f'{guard}(uint64_t)(uintptr_t){val}{" : 0" if out else ""}'
    if w == 'S':
        return prep, w, f'{guard}(int64_t)(intptr_t){val}{" : 0" if out else ""}'
    ptr = f'ptr_{a.name}'
    n = f'len_{a.name}'
    if a.fmt == 'str':
        prep.append(f'const char *{ptr} = (const char *){a.name};')
        prep.append(f'size_t {n} = {ptr} ? strnlen({ptr}, NRR_BYTES_CAP_DEFAULT + 1) : 0;')
    elif a.fmt == 'bytes':
        size = f'sizeof(*{a.name})' if a.kind == 'sizeof' and a.is_ptr else \
               f'sizeof({a.name})' if a.kind == 'sizeof' else a.kind
        if a.is_ptr:
            prep.append(f'const void *{ptr} = (const void *){a.name};')
            prep.append(f'size_t {n} = {ptr} ? (size_t)({size}) : 0;')
        else:
            prep.append(f'const void *{ptr} = (const void *)&{a.name};')
            prep.append(f'size_t {n} = (size_t)({size});')
    elif a.fmt == 'struct':
        size = a.kind if a.kind.isdigit() else f'sizeof({a.kind})'
        prep.append(f'const void *{ptr} = (const void *){a.name};')
        prep.append(f'size_t {n} = {ptr} ? (size_t)({size}) : 0;')
    elif a.fmt in ('buf', 'sockaddr'):
        k = a.kind
        mul = re.match(r'^(\w+)\*(\w+)$', k)
        if k == 'ret':
            ln = '(nrr_ret > 0 ? (size_t)nrr_ret : 0)'
        elif mul and mul.group(1) == 'ret':
            ln = f'(nrr_ret > 0 ? (size_t)nrr_ret * (size_t)({mul.group(2)}) : 0)'
        elif mul:
            ln = f'(size_t)({mul.group(1)}) * (size_t)({mul.group(2)})'
        elif k.startswith('*'):
            ln = f'({k[1:]} ? (size_t)*{k[1:]} : 0)'
        else:
            ln = f'(size_t)({k})'
        if a.fmt == 'sockaddr':
            ln = f'({ln} < {SOCKADDR_MAX}u ? {ln} : {SOCKADDR_MAX}u)'
        prep.append(f'const void *{ptr} = (const void *){a.name};')
        prep.append(f'size_t {n} = {ptr} ? {ln} : 0;')
    elif a.fmt == 'iov':
        # the bytes of the vector gathered: as many as the call moved at
        # leave (its result), all of them at enter
        limit = '(nrr_ret > 0 ? (size_t)nrr_ret : 0)' if when == 'leave' else 'SIZE_MAX'
        prep.append(f'uint8_t gbuf_{a.name}[NRR_BYTES_CAP_DEFAULT];')
        prep.append(f'size_t {n} = nrr_iov_gather(gbuf_{a.name}, sizeof(gbuf_{a.name}), {a.name}, (long)({a.kind}), {limit});')
        prep.append(f'const void *{ptr} = gbuf_{a.name};')
    elif a.fmt == 'custom':
        prep.append(f'uint8_t cbuf_{a.name}[NRR_CUSTOM_MAX];')
        prep.append(f'size_t {n} = nrr_custom_{a.kind}(cbuf_{a.name}, {a.name}{", (long long)nrr_ret" if out else ", 0"});')
        prep.append(f'const void *{ptr} = cbuf_{a.name};')
    return prep, w, (ptr, n)


def field_code(api, fn, a, when):
    """(length-prep lines, max-bytes expr, put statement) for arg a at enter/leave."""
    prep, w, val = field_value(api, fn, a, when)
    if w == 'U':
        return prep, 'NRR_VAR_MAX', f'nrrp = nrr_put_uvar(nrrp, {val});'
    if w == 'S':
        return prep, 'NRR_VAR_MAX', f'nrrp = nrr_put_svar(nrrp, {val});'
    ptr, n = val
    # payloads (buf:) are cut at the run-time cap (ncclrr record --payload);
    # every other byte field is kept whole up to the fixed cap: replay needs it
    cap = 'nrr_payload_cap' if a.fmt in ('buf', 'iov') else 'NRR_BYTES_CAP_DEFAULT'
    maxe = f'NRR_BYTES_MAX({n} < {cap} ? {n} : {cap})'
    put = f'nrrp = nrr_put_bytes(nrrp, {ptr}, {n}, {cap});'
    return prep, maxe, put


def recorded_args(fn, when):
    """The args recorded at enter ('in', 'inout') or leave ('out', 'inout')."""
    dirs = ('in', 'inout') if when == 'enter' else ('out', 'inout')
    return [a for a in fn.args if a.fmt != 'skip' and a.dir in dirs] + (fn.results if when == 'leave' else [])


def ret_expr(fn):
    """The result as int64_t, as the LEAVE record stores it."""
    if fn.ret == 'void':
        return '0'
    if fn.ret == 'ptr' or norm_type(fn.ret_type).endswith('*'):
        return '(int64_t)(intptr_t)nrr_ret'
    return '(int64_t)nrr_ret'


def notready_expr(api, fn):
    """C expression: this leave is the poll answer "not ready" (coalesced)."""
    if fn.poll and fn.poll[0] == 'ret':
        return f'(int64_t)nrr_ret == {enum_value(api, fn, fn.poll[1])}LL'
    if fn.poll and fn.poll[0] == 'err':   # -1 and this errno (a non-blocking call's "try again")
        return f'(int64_t)nrr_ret == -1 && nrr_err == {fn.poll[1]}'
    if fn.poll:
        return f'{fn.poll[1]} && (int64_t)*{fn.poll[1]} == {enum_value(api, fn, fn.poll[2])}LL'
    return 'false'


def write(path, text):
    try:
        with open(path, encoding='utf-8') as f:
            if f.read() == text:
                return
    except OSError:
        pass
    with open(path, 'w', encoding='utf-8') as f:
        f.write(text)


def args_c(fn):
    return ', '.join(a.name for a in fn.args)
