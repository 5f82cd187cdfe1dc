#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""ncclrr_gen.py - turn the API description (formats/api/*.api) into code.

The description language is documented in formats/api/README.md. This
script parses it into a model (Api -> Domain/Fn/Arg/Enum) and runs one
emitter over the model:

  --emit encoders   nrr_api_gen.h, nrr_api_gen.c: function ids, the schema
                    text carried by every trace, typed record encoders
  --emit list       one line per function: domain name nargs flags
  --emit schema     the schema text alone
  --emit lttng      nrr_lttng_gen.h, nrr_lttng_gen.c: LTTng-UST providers
                    ncclrr_<domain> and nrr_lt_<fn>_enter/_leave()
  --emit replay     nrr_replay_gen.h, nrr_replay_gen.c: call thunks and
                    out-readers of the cuda_driver, nvml and verbs
                    functions for the replay engine (replayer/engine/rcuda.c)
  --emit cudart-errors  nrr_cudart_errors_gen.h: the cudaError_t codes and
                    names, for ncclrr's CUDA runtime (replayer/fake/)
  --emit semantics  nrr_sem_gen.c: each function's call semantics (role=,
                    arg=, notready=, transient=, poll=, conv lines) as
                    its schema's sem= attribute, the fallback for traces
                    whose schema lacks them
  --emit benign     nrr_benign_gen.c: the failures a healthy run has too
                    (benign=), for nrr_call_benign() (formats/callfmt.c)

Interposer wrappers, LTTng-UST providers and the replay table are further
emitters over the same model (see Emitters at the end).
"""
import argparse
import os
import errno
import re
import sys

SCALAR_FMTS = {'u', 'i', 'x', 'bool', 'fd'}
BUILTIN_SCALARS = {
    'int': 'i', 'unsigned': 'u', 'unsigned int': 'u', 'long': 'i', 'unsigned long': 'u',
    'long long': 'i', 'unsigned long long': 'u', 'short': 'i', 'unsigned short': 'u',
    'char': 'i', 'unsigned char': 'u', 'size_t': 'u', 'ssize_t': 'i', 'socklen_t': 'u',
    'uint8_t': 'u', 'uint16_t': 'u', 'uint32_t': 'u', 'uint64_t': 'u', 'int8_t': 'i',
    'int16_t': 'i', 'int32_t': 'i', 'int64_t': 'i', 'uintptr_t': 'x', 'nfds_t': 'u',
    'pid_t': 'i', 'off_t': 'i', 'float': 'i', 'double': 'i', 'in_port_t': 'u',
}
RET_CONVS = {'void', 'curesult', 'cudart', 'nccl', 'nvml', 'errno', 'poserr', 'ptr', 'int'}
RET_BY_TYPE = {'CUresult': 'curesult:CUresult', 'cudaError_t': 'cudart:cudaError_t',
               'ncclResult_t': 'nccl:ncclResult_t', 'nvmlReturn_t': 'nvml:nvmlReturn_t',
               'void': 'void'}
WIRE = {'u': 'U', 'x': 'U', 'bool': 'U', 'flags': 'U', 'handle': 'U', 'i': 'S', 'enum': 'S',
        'fd': 'S', 'str': 'B', 'bytes': 'B', 'buf': 'B', 'sockaddr': 'B', 'struct': 'B', 'custom': 'B', 'iov': 'B'}
SCHEMA_FMT = {'buf': 'bytes', 'struct': 'bytes', 'custom': 'bytes', 'iov': 'bytes'}
# Longest socket address read back through a value-result length (the
# kernel reports the full length even when it truncated the copy).
SOCKADDR_MAX = 128


class ApiError(Exception):
    pass


class Enum:
    def __init__(self, name, flags, where):
        self.name, self.flags, self.where = name, flags, where
        self.values = []  # (symbol, int)


class Arg:
    def __init__(self, ctype, name):
        self.ctype, self.name = ctype, name
        self.dir = None
        self.fmt = None      # u i x bool enum flags handle fd str bytes buf sockaddr custom skip
        self.kind = None     # table, handle kind, byte count, length expr or custom name
        self.hflag = None    # create / consume
        self.explicit = False
        self.where = None    # file:line of its description line, if any

    @property
    def is_ptr(self):
        return self.ctype.endswith('*')

    @property
    def base(self):
        return norm_type(self.ctype.rstrip('*').strip())


class Fn:
    def __init__(self, domain, ret_type, name, args, where):
        self.domain, self.ret_type, self.name, self.args, self.where = domain, ret_type, name, args, where
        self.ret = None
        self.ret_table = None
        self.blocking = False
        self.instant = False  # returns without waiting: one timestamp, duration not measured
        self.poll = None  # ('ret', value), ('out', arg, value) or ('err', ERRNO)
        self.versions = None  # e.g. ['6', '10']: interface versions that have it (net)
        self.filter = None    # C expression: record only when true (wrappers)
        self.guard = None     # C expression: an errno refuses the call before it runs (wrappers)
        self.before = None    # C expression run before the call is recorded (wrappers)
        self.after = None     # C expression run after the real call (wrappers)
        self.hook = False     # wrapper written by hand (tracer/), not generated
        self.benign = []      # [(why, 'ret'|'err', [values])]: failures a healthy run has too
        self.role = None      # what the call does (ROLES): connect, recv, proxy_req, ...
        self.argroles = []    # [(ROLE, PARAM)]: which parameter is the fd, the address, ...
        self.notready = None  # ('ret'|'err', [values]): answers that mean "not ready" besides poll=
        self.transient = None  # ('ret'|'err', [values]): errors that are no failure (replaces conv's)
        self.sem = []         # the semantics' schema tokens (resolve())
        self.id = 0


class Domain:
    def __init__(self, name, where):
        self.name, self.where = name, where
        self.ret = None
        self.intret = None
        self.lib = None      # library the wrappers resolve the real symbols in
        self.benign = []     # as Fn.benign, for every function of the domain


class Api:
    def __init__(self):
        self.enums = {}
        self.fns = []
        self.by_name = {}
        self.domains = {}
        self.scalars = dict(BUILTIN_SCALARS)  # type -> fmt[:kind]
        self.bytetypes = {}  # type -> size expression
        self.ptrhandles = {}  # struct type -> handle kind (pointers to it are handles)
        self.c_lines = []
        self.convs = {}  # return convention -> {'notready': (...), 'transient': (...)} (conv lines)


def norm_type(t):
    t = re.sub(r'\bconst\b', '', t)
    t = re.sub(r'\bstruct\s+', 'struct ', t)
    t = re.sub(r'\s*\*\s*', '*', t)
    return re.sub(r'\s+', ' ', t).strip()


def split_params(s, where):
    params, depth, cur = [], 0, ''
    for ch in s:
        if ch == '(':
            depth += 1
        elif ch == ')':
            depth -= 1
        if ch == ',' and depth == 0:
            params.append(cur)
            cur = ''
        else:
            cur += ch
    if cur.strip():
        params.append(cur)
    out = []
    for p in params:
        p = p.strip()
        if p == 'void':
            continue
        m = re.match(r'^(.*?)([A-Za-z_]\w*)\s*(\[\s*\w*\s*\])?$', p)
        if not m or not m.group(1).strip():
            raise ApiError(f'{where}: cannot read parameter "{p}" (write "TYPE NAME")')
        ctype = m.group(1).strip()
        if m.group(3):
            ctype += '*'
        ctype = re.sub(r'\s*\*\s*', '*', re.sub(r'\s+', ' ', m.group(1)).strip())
        out.append(Arg(ctype, m.group(2)))
    return out


def parse_fmt(tok, where):
    fmt, _, kind = tok.partition(':')
    if fmt not in WIRE and fmt != 'skip':
        raise ApiError(f'{where}: unknown encoding "{fmt}"')
    if fmt in ('enum', 'flags', 'handle', 'bytes', 'buf', 'sockaddr', 'struct', 'custom', 'iov') and not kind:
        raise ApiError(f'{where}: "{fmt}" needs ":{ {"enum": "TABLE", "flags": "TABLE", "handle": "KIND", "bytes": "N|sizeof", "buf": "LEN", "sockaddr": "LEN", "struct": "N|TYPE", "custom": "NAME", "iov": "COUNT"}[fmt]}"')
    if fmt == 'struct' and not re.match(r'^(\d+|[A-Za-z_]\w*)$', kind):
        raise ApiError(f'{where}: "struct:{kind}": the size is a number or a type declared in a "c" line')
    return fmt, kind or None


def parse_files(paths):
    api = Api()
    for path in paths:
        domain = None
        cur_enum = None
        cur_fn = None
        with open(path, encoding='utf-8') as f:
            lines = f.read().split('\n')
        i = 0
        while i < len(lines):
            raw = lines[i]
            lineno = i + 1
            i += 1
            where = f'{path}:{lineno}'
            line = raw.split('#', 1)[0].rstrip() if not raw.lstrip().startswith('c ') else raw.rstrip()
            if not line.strip():
                continue
            indented = line[0] in ' \t'
            words = line.split()
            if indented:
                if cur_enum is not None:
                    m = re.match(r'^\s*([A-Za-z_]\w*)\s*=\s*(-?(?:0x[0-9a-fA-F]+|\d+))\s*$', line)
                    if not m:
                        raise ApiError(f'{where}: expected "SYMBOL = VALUE" in enum {cur_enum.name}')
                    cur_enum.values.append((m.group(1), int(m.group(2), 0)))
                elif cur_fn is not None:
                    parse_arg_line(api, cur_fn, words, where)
                else:
                    raise ApiError(f'{where}: indented line outside an enum or fn')
                continue
            cur_enum = None
            cur_fn = None
            kw = words[0]
            if kw == 'conv':
                if len(words) < 3 or words[1] not in RET_CONVS:
                    raise ApiError(f'{where}: conv wants "conv CONV notready=...|transient=..." '
                                   f'(CONV one of {", ".join(sorted(RET_CONVS))})')
                c = api.convs.setdefault(words[1], {})
                for w in words[2:]:
                    k, _, v = w.partition('=')
                    if k not in ('notready', 'transient'):
                        raise ApiError(f'{where}: unknown conv option "{w}" (notready=, transient=)')
                    c[k] = parse_results(v, where, k)
                continue
            if kw == 'domain':
                if len(words) < 2:
                    raise ApiError(f'{where}: domain needs a name')
                domain = api.domains.get(words[1]) or Domain(words[1], where)
                api.domains[words[1]] = domain
                for w in words[2:]:
                    k, _, v = w.partition('=')
                    if k == 'benign':
                        domain.benign.append(parse_benign(v, where))
                        continue
                    if k not in ('ret', 'intret', 'lib') or not v:
                        raise ApiError(f'{where}: unknown domain option "{w}"')
                    if k != 'lib':
                        check_ret(v, where)
                    setattr(domain, k, v)
            elif kw == 'c':
                api.c_lines.append(raw.strip()[2:])
            elif kw == 'scalar':
                if len(words) != 3:
                    raise ApiError(f'{where}: expected "scalar TYPE FMT"')
                parse_fmt(words[2], where)
                api.scalars[words[1]] = words[2]
            elif kw == 'ptrhandle':
                if len(words) < 3:
                    raise ApiError(f'{where}: expected "ptrhandle KIND TYPE"')
                api.ptrhandles[norm_type(' '.join(words[2:]))] = words[1]
            elif kw == 'bytes':
                if len(words) != 3:
                    raise ApiError(f'{where}: expected "bytes TYPE N|sizeof"')
                api.bytetypes[words[1]] = words[2]
            elif kw == 'enum':
                if len(words) not in (2, 3) or (len(words) == 3 and words[2] != 'flags'):
                    raise ApiError(f'{where}: expected "enum NAME [flags]"')
                if words[1] in api.enums:
                    raise ApiError(f'{where}: enum {words[1]} already defined at {api.enums[words[1]].where}')
                cur_enum = Enum(words[1], len(words) == 3, where)
                api.enums[words[1]] = cur_enum
            elif kw == 'fn':
                if domain is None:
                    raise ApiError(f'{where}: fn before any "domain" line')
                # a prototype may continue on following lines until ')'
                text = line[2:].strip()
                while text.count('(') > text.count(')') and i < len(lines):
                    text += ' ' + lines[i].split('#', 1)[0].strip()
                    i += 1
                cur_fn = parse_proto(api, domain, text, where)
            else:
                raise ApiError(f'{where}: unknown keyword "{kw}"')
    return api


# benign=WHY:ret:V1|V2 or benign=WHY:err:E1|E2: failures that a healthy run
# has too; WHY names the sentence the analyzer prints (formats/callfmt.c)
BENIGN_WHY = {
    'probe': 'probing: a port, protocol, option or symbol that may not be there',
    'absent': 'an optional device or feature is absent',
    'retry': 'retried: the peer is not listening yet',
    'done': 'already done',
}


def parse_benign(v, where):
    parts = v.split(':')
    if len(parts) != 3 or parts[0] not in BENIGN_WHY or parts[1] not in ('ret', 'err') or not parts[2]:
        raise ApiError(f'{where}: benign wants "benign=WHY:ret:V1|V2" or "benign=WHY:err:E1|E2" '
                       f'with WHY one of {", ".join(sorted(BENIGN_WHY))}')
    vals = parts[2].split('|')
    if parts[1] == 'err' and not all(re.fullmatch(r'E[A-Z0-9]+', x) for x in vals):
        raise ApiError(f'{where}: benign=...:err: wants errno names (EADDRINUSE|...)')
    return (parts[0], parts[1], vals)


# role=ROLE: what a call does, for the tools that follow connections,
# waits and proxy RPCs (nrr_call_role(), formats/callfmt.h: same order)
ROLES = ['none', 'connect', 'accept', 'send', 'recv', 'poll', 'close', 'sock_setup', 'sock_pair', 'sock_info',
         'proxy_req', 'proxy_resp', 'cq_poll', 'net_test', 'sync', 'fd_export', 'fd_import']
# arg=ROLE:PARAM: what a parameter is (nrr_fn_arg(), same order)
ARG_ROLES = ['fd', 'addr', 'fds', 'payload', 'id']


def parse_results(v, where, what):
    """notready=/transient= values: ret:V1|V2 (results) or err:E1|E2 (errnos)."""
    kind, _, vals = v.partition(':')
    vals = vals.split('|') if vals else []
    if kind not in ('ret', 'err') or not vals:
        raise ApiError(f'{where}: {what} wants "{what}=ret:V1|V2" or "{what}=err:E1|E2"')
    if kind == 'err' and not all(re.fullmatch(r'E[A-Z0-9]+', x) and hasattr(errno, x) for x in vals):
        raise ApiError(f'{where}: {what}=err: wants errno names (EAGAIN|...)')
    if len(vals) > 4:
        raise ApiError(f'{where}: {what}: at most 4 values')
    return (kind, vals)


def check_ret(v, where):
    conv = v.split(':')[0]
    if conv not in RET_CONVS:
        raise ApiError(f'{where}: unknown return convention "{conv}" (one of {", ".join(sorted(RET_CONVS))})')


def parse_proto(api, domain, text, where):
    m = re.match(r'^(.+?)\b([A-Za-z_]\w*)\s*\(', text)
    close, depth = -1, 0
    for i in range(m.end() - 1 if m else len(text), len(text)):
        depth += {'(': 1, ')': -1}.get(text[i], 0)
        if depth == 0:
            close = i
            break
    if not m or close < 0:
        raise ApiError(f'{where}: expected "fn RETTYPE NAME(PARAMS) [attributes]"')
    # (the attributes may hold parentheses: after=f(a,b))
    params, attrs = text[m.end():close], text[close + 1:]
    ret_type = re.sub(r'\s*\*\s*', '*', re.sub(r'\s+', ' ', m.group(1)).strip())
    name = m.group(2)
    if name in api.by_name:
        raise ApiError(f'{where}: {name} already described at {api.by_name[name].where}')
    fn = Fn(domain.name, ret_type, name, split_params(params, where), where)
    for attr in attrs.split():
        if attr == 'blocking':
            fn.blocking = True
        elif attr == 'instant':
            fn.instant = True
        elif attr.startswith('poll='):
            parts = attr[5:].split(':')
            if parts[0] == 'ret' and len(parts) == 2:
                fn.poll = ('ret', parts[1])
            elif parts[0] == 'out' and len(parts) == 3:
                fn.poll = ('out', parts[1], parts[2])
            elif parts[0] == 'err' and len(parts) == 2 and re.fullmatch(r'E[A-Z0-9]+', parts[1]):
                fn.poll = ('err', parts[1])
            else:
                raise ApiError(f'{where}: poll wants "poll=ret:VALUE", "poll=out:ARG:VALUE" or "poll=err:ERRNO"')
            fn.blocking = True
        elif attr.startswith('ret='):
            check_ret(attr[4:], where)
            fn.ret = attr[4:]
        elif attr.startswith('filter='):
            fn.filter = attr[7:]
        elif attr.startswith('guard='):
            fn.guard = attr[6:]
        elif attr.startswith('after='):
            fn.after = attr[6:]
        elif attr.startswith('before='):
            fn.before = attr[7:]
        elif attr == 'hook':
            fn.hook = True
        elif attr.startswith('benign='):
            fn.benign.append(parse_benign(attr[7:], where))
        elif attr.startswith('role='):
            if attr[5:] not in ROLES[1:]:
                raise ApiError(f'{where}: role wants one of {", ".join(ROLES[1:])}')
            fn.role = attr[5:]
        elif attr.startswith('arg='):
            r, _, pname = attr[4:].partition(':')
            if r not in ARG_ROLES or not pname:
                raise ApiError(f'{where}: arg wants "arg=ROLE:PARAM" with ROLE one of {", ".join(ARG_ROLES)}')
            fn.argroles.append((r, pname))
        elif attr.startswith('notready='):
            fn.notready = parse_results(attr[9:], where, 'notready')
        elif attr.startswith('transient='):
            fn.transient = parse_results(attr[10:], where, 'transient')
        elif attr.startswith('versions='):
            m2 = re.match(r'^(\d+)(?:\.\.(\d+))?$', attr[9:])
            if not m2:
                raise ApiError(f'{where}: versions wants "versions=N" or "versions=N..M"')
            lo, hi = int(m2.group(1)), int(m2.group(2) or m2.group(1))
            if hi < lo:
                raise ApiError(f'{where}: empty version range "{attr[9:]}"')
            fn.versions = (lo, hi)
        else:
            raise ApiError(f'{where}: unknown attribute "{attr}"')
    if fn.instant and fn.blocking:
        raise ApiError(f'{where}: {name} is instant (never waits) and blocking or poll= (may wait): pick one')
    api.fns.append(fn)
    api.by_name[name] = fn
    return fn


def parse_arg_line(api, fn, words, where):
    if words[:1] == ['skip'] and len(words) != 2 or \
            words[:1] != ['skip'] and (len(words) not in (3, 4) or words[0] not in ('in', 'out', 'inout')):
        raise ApiError(f'{where}: expected "in|out|inout NAME ENCODING [create|consume]" or "skip NAME"')
    arg = next((a for a in fn.args if a.name == words[1]), None)
    if arg is None:
        raise ApiError(f'{where}: {fn.name} has no parameter "{words[1]}"')
    if arg.explicit:
        raise ApiError(f'{where}: parameter "{words[1]}" described twice')
    arg.explicit = True
    arg.where = where
    if words[0] == 'skip':
        arg.fmt = 'skip'
        return
    arg.dir = words[0]
    arg.fmt, arg.kind = parse_fmt(words[2], where)
    if len(words) == 4:
        if words[3] not in ('create', 'consume'):
            raise ApiError(f'{where}: unknown flag "{words[3]}"')
        arg.hflag = words[3]


def default_arg(api, fn, arg):
    """Encoding of a parameter the description does not mention."""
    t = norm_type(arg.ctype)
    const = 'const' in arg.ctype
    stars = t.count('*')
    base = t.rstrip('*').strip()
    if stars == 0:
        if base in api.bytetypes:
            arg.dir, arg.fmt, arg.kind = 'in', 'bytes', api.bytetypes[base]
        elif base in api.scalars:
            arg.dir = 'in'
            arg.fmt, arg.kind = parse_fmt(api.scalars[base], fn.where)
        else:
            raise ApiError(f'{fn.where}: {fn.name}: no encoding for parameter "{arg.name}" of type {arg.ctype}; '
                           f'describe it ("in {arg.name} FMT") or declare the type ("scalar {base} FMT")')
    elif stars == 1 and base in api.ptrhandles:
        arg.dir, arg.fmt, arg.kind = 'in', 'handle', api.ptrhandles[base]
    elif stars == 2 and base in api.ptrhandles and not const:
        arg.dir, arg.fmt, arg.kind = 'out', 'handle', api.ptrhandles[base]
    elif stars == 1 and base in ('char',) and const:
        arg.dir, arg.fmt = 'in', 'str'
    elif stars == 1 and not const and base in api.bytetypes:
        arg.dir, arg.fmt, arg.kind = 'out', 'bytes', api.bytetypes[base]
    elif stars == 1 and not const and base in api.scalars and base != 'void':
        arg.dir = 'out'
        arg.fmt, arg.kind = parse_fmt(api.scalars[base], fn.where)
    elif stars == 2 and not const and base == 'void':
        arg.dir, arg.fmt = 'out', 'x'
    else:
        arg.dir, arg.fmt = 'in', 'x'


def resolve(api):
    for e in api.enums.values():
        if not e.values:
            raise ApiError(f'{e.where}: enum {e.name} has no values')
    for n, fn in enumerate(api.fns, 1):
        fn.id = n
        dom = api.domains[fn.domain]
        if fn.ret is None:
            rt = norm_type(fn.ret_type)
            if rt in RET_BY_TYPE:
                fn.ret = RET_BY_TYPE[rt]
            elif rt.endswith('*'):
                fn.ret = 'ptr'
            elif dom.intret:
                fn.ret = dom.intret
            elif dom.ret:
                fn.ret = dom.ret
            else:
                fn.ret = 'int'
        conv, _, table = fn.ret.partition(':')
        fn.ret = conv
        fn.ret_table = table or None
        if fn.ret_table and fn.ret_table not in api.enums:
            raise ApiError(f'{fn.where}: {fn.name}: unknown enum {fn.ret_table}')
        if len(fn.args) > 24:
            raise ApiError(f'{fn.where}: {fn.name}: more than 24 parameters')
        for a in fn.args:
            if not a.explicit:
                default_arg(api, fn, a)
            aw = a.where or fn.where
            if a.fmt in ('enum', 'flags') and a.kind not in api.enums:
                raise ApiError(f'{aw}: {fn.name}: parameter {a.name}: unknown enum {a.kind}')
            if a.fmt == 'iov' and not any(b.name == a.kind for b in fn.args):
                raise ApiError(f'{aw}: {fn.name}: count "{a.kind}" of {a.name} is not a parameter')
            if a.fmt in ('buf', 'sockaddr'):
                ln = re.sub(r'(?<=\w)\*\w+$', '', a.kind).lstrip('*')
                if ln != 'ret' and not ln.isdigit() and not any(b.name == ln for b in fn.args):
                    raise ApiError(f'{aw}: {fn.name}: length "{a.kind}" of {a.name} is not a parameter')
                if ln == 'ret' and a.dir != 'out':
                    raise ApiError(f'{aw}: {fn.name}: length "ret" only for out parameters')
            if a.fmt == 'struct' and not a.is_ptr:
                raise ApiError(f'{aw}: {fn.name}: struct parameter {a.name} must be a pointer')
            if a.dir in ('out', 'inout') and a.fmt != 'skip' and not a.is_ptr:
                raise ApiError(f'{aw}: {fn.name}: out parameter {a.name} must be a pointer')
        if fn.poll and fn.poll[0] == 'out' and not any(a.name == fn.poll[1] for a in fn.args):
            raise ApiError(f'{fn.where}: {fn.name}: poll names unknown parameter {fn.poll[1]}')
        fn.sem = sem_tokens(api, fn)
    return api


def result_values(api, fn, kind, vals):
    return [str(getattr(errno, v)) if kind == 'err' else str(enum_value(api, fn, v)) for v in vals]


def sem_tokens(api, fn):
    """The call semantics of fn as the items of its schema attribute
    sem= (FORMAT.md "Call semantics"): its role, its parameters' roles, and
    which answers mean "not ready" (its poll= and its convention's) or are
    transient (its own transient=, else its convention's); values as
    numbers."""
    conv = api.convs.get(fn.ret, {})
    out = [f'role:{fn.role}'] if fn.role else []
    for r, pname in fn.argroles:
        if not any(a.name == pname and a.fmt != 'skip' for a in fn.args):
            raise ApiError(f'{fn.where}: {fn.name}: arg={r}:{pname} names no recorded parameter')
        out.append(f'arg:{r}:{pname}')
    nr = {'ret': [], 'err': []}
    for src in (conv.get('notready'), fn.notready):
        if src:
            nr[src[0]] += result_values(api, fn, *src)
    if fn.poll and fn.poll[0] in ('ret', 'err'):
        nr[fn.poll[0]].append(str(getattr(errno, fn.poll[1])) if fn.poll[0] == 'err' else str(enum_value(api, fn, fn.poll[1])))
    for kind in ('ret', 'err'):
        vals = list(dict.fromkeys(nr[kind]))
        if len(vals) > 4:
            raise ApiError(f'{fn.where}: {fn.name}: at most 4 not-ready {kind} values')
        if vals:
            out.append(f'notready:{kind}:{"|".join(vals)}')
    if fn.poll and fn.poll[0] == 'out':
        out.append(f'notready:out:{fn.poll[1]}:{enum_value(api, fn, fn.poll[2])}')
    tr = fn.transient or conv.get('transient')
    if tr:
        out.append(f'transient:{tr[0]}:{"|".join(result_values(api, fn, *tr))}')
    return out


def enum_value(api, fn, text):
    if re.match(r'^-?(0x[0-9a-fA-F]+|\d+)$', text):
        return int(text, 0)
    for e in api.enums.values():
        for s, v in e.values:
            if s == text:
                return v
    raise ApiError(f'{fn.where}: {fn.name}: unknown value "{text}"')


# ------------------------------------------------------------------ schema

def enum_text(e):
    """An enum table's schema lines."""
    return '\n'.join([f'enum {e.name}' + (' flags' if e.flags else '')] + [f'v {v} {s}' for s, v in e.values]) + '\n'


def fn_text(fn):
    """A function's schema lines after "fn ID ": the writer of a trace
    numbers functions itself when it writes them on first use."""
    ret = fn.ret + (f':{fn.ret_table}' if fn.ret_table else '')
    attrs = (' blocking' if fn.blocking else '') + (' poll' if fn.poll else '') + (' instant' if fn.instant else '')
    attrs += f' sem={",".join(fn.sem)}' if fn.sem else ''
    out = [f'{fn.name} {fn.domain} {ret}{attrs}']
    for a in fn.args:
        if a.fmt == 'skip':
            continue
        fmt = SCHEMA_FMT.get(a.fmt, a.fmt)
        if a.fmt in ('enum', 'flags', 'handle'):
            fmt += ':' + a.kind
        out.append(f'a {a.dir} {a.name} {fmt}' + (f' {a.hflag}' if a.hflag else ''))
    return '\n'.join(out) + '\n'


def fn_enums(api, fn):
    """Indices (in api.enums order) of the tables @fn's schema lines name."""
    names = list(api.enums)
    used = [fn.ret_table] if fn.ret_table else []
    used += [a.kind for a in fn.args if a.fmt in ('enum', 'flags')]
    return sorted({names.index(n) for n in used})


def schema_text(api):
    out = 'ncclrr-schema 1\n' + ''.join(enum_text(e) for e in api.enums.values())
    out += ''.join(f'fn {fn.id} ' + fn_text(fn) for fn in api.fns)
    return out + 'end\n'


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
    return [a for a in fn.args if a.fmt != 'skip' and a.dir in dirs]


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


def emit_encoders(api, outdir):
    schema = schema_text(api)
    h = ['/* Generated by formats/gen/ncclrr_gen.py from formats/api/: do not edit. */',
         '#ifndef NCCLRR_API_GEN_H', '#define NCCLRR_API_GEN_H', '',
         '#include <stddef.h>', '#include <stdint.h>', '#include <string.h>',
         '#include <errno.h>', '#include <sys/types.h>', '#include <sys/socket.h>', '#include <poll.h>',
         '#include <ifaddrs.h>', '#include <netdb.h>', '#include <sys/uio.h>', '#include <sys/epoll.h>',
         '#include <sys/select.h>', '#include <signal.h>', '#include <time.h>', '#include "nrt.h"', '',
         '/* C declarations of the described APIs (no CUDA, NCCL or verbs headers needed). */']
    h += api.c_lines
    h += ['', f'#define NRR_FN_COUNT {len(api.fns)}']
    for fn in api.fns:
        h.append(f'#define NRR_FN_{fn.name} {fn.id}')
    h += ['', '/* custom encoders (formats/api/custom.c): fill buf, return bytes used */',
          '#define NRR_CUSTOM_MAX 512',
          '/* iov:COUNT: the first min(total, @cap) bytes of @cnt iovecs, stopping at',
          ' * @limit bytes; @return the total (at most @limit) */',
          'size_t nrr_iov_gather(uint8_t *buf, size_t cap, const struct iovec *iov, long cnt, size_t limit);']
    customs = sorted({a.kind for fn in api.fns for a in fn.args if a.fmt == 'custom'})
    for c in customs:
        h.append(f'size_t nrr_custom_{c}(uint8_t *buf, const void *v, long long ret);')
    h.append('')
    c = ['/* Generated by formats/gen/ncclrr_gen.py from formats/api/: do not edit. */',
         '#include "nrr_api_gen.h"', '',
         f'const char nrr_builtin_schema[] =\n\t{c_string(schema)};',
         'const size_t nrr_builtin_schema_len = sizeof(nrr_builtin_schema) - 1;', '']
    # the same schema in parts, for a writer that writes each function's
    # lines (and the tables they name) when the function is first recorded
    c.append('static const char *const schema_fn_text[] = {\n\tNULL,')
    c += [f'\t{c_string(fn_text(fn))},' for fn in api.fns]
    c.append('};')
    c.append('static const char *const schema_enum_text[] = {')
    c += [f'\t{c_string(enum_text(e))},' for e in api.enums.values()]
    c.append('};')
    at, flat = [0, 0], []
    for fn in api.fns:
        flat += fn_enums(api, fn)
        at.append(len(flat))
    c.append('static const uint16_t schema_fn_enum[] = {' + ', '.join(map(str, flat or [0])) + '};')
    c.append('static const uint32_t schema_fn_enum_at[] = {' + ', '.join(map(str, at)) + '};')
    c += ['const nrr_schema_parts nrr_builtin_parts = {',
          f'\t.nfns = {len(api.fns)}, .nenums = {len(api.enums)},',
          '\t.fn_text = schema_fn_text, .enum_text = schema_enum_text,',
          '\t.fn_enum = schema_fn_enum, .fn_enum_at = schema_fn_enum_at,',
          '};', '']
    for fn in api.fns:
        params = params_c(fn)
        sig_e = f'void nrr_rec_{fn.name}_enter(nrr_tls *nrrt{", " + params if params else ""})'
        ret_param = '' if fn.ret == 'void' else f', {fn.ret_type} nrr_ret'
        sig_l = f'void nrr_rec_{fn.name}_leave(nrr_tls *nrrt{ret_param}, int nrr_err{", " + params if params else ""})'
        h.append(sig_e + ';')
        h.append(sig_l + ';')
        for when, sig, dirs in (('enter', sig_e, ('in', 'inout')), ('leave', sig_l, ('out', 'inout'))):
            prep, maxes, puts = [], ['0'], []
            for a in fn.args:
                if a.fmt == 'skip' or a.dir not in dirs:
                    continue
                pr, mx, pu = field_code(api, fn, a, when)
                prep += pr
                maxes.append(mx)
                puts.append(pu)
            body = [sig, '{']
            body += ['\t' + l for l in prep]
            used = {a.name for a in fn.args if a.fmt != 'skip' and a.dir in dirs}
            for a in fn.args:
                if a.name not in used:
                    body.append(f'\t(void){a.name};')
            if when == 'enter':
                body.append(f'\tuint8_t *nrrp = nrr_enter_begin(nrrt, NRR_FN_{fn.name}, {" + ".join(maxes)});')
                body += ['\t' + l for l in puts]
                body.append('\tnrr_enter_end(nrrt, nrrp);')
            else:
                res = ret_expr(fn)
                begin = 'nrr_leave_begin_instant' if fn.instant else 'nrr_leave_begin'
                body.append(f'\tuint8_t *nrrp = {begin}(nrrt, {res}, (uint32_t)nrr_err, {" + ".join(maxes)});')
                body += ['\t' + l for l in puts]
                nr = notready_expr(api, fn)
                body.append(f'\tnrr_leave_end(nrrt, nrrp, {nr});')
            body.append('}')
            c += body + ['']
    h += ['', '#endif']
    write(os.path.join(outdir, 'nrr_api_gen.h'), '\n'.join(h) + '\n')
    write(os.path.join(outdir, 'nrr_api_gen.c'), '\n'.join(c))


# ------------------------------------------------------------------ lttng

def lttng_fields(api, fn, when):
    """[(arg, wire, field names)] of the event <fn>_<when>, after checking
    that the field names (args, ret, err, <arg>_len) do not collide."""
    args = recorded_args(fn, when)
    names = ['ret', 'err'] if when == 'leave' else []
    if when == 'leave' and fn.poll:
        names.append('notready')
    for a in args:
        names.append(a.name)
        if WIRE[a.fmt] == 'B':
            names.append(a.name + '_len')
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ApiError(f'{fn.where}: {fn.name}: LTTng field name "{dup[0]}" used twice in {fn.name}_{when} '
                       f'(rename the parameter in the prototype)')
    return args


def emit_lttng(api, outdir):
    """nrr_lttng_gen.h: one LTTng-UST provider per domain (ncclrr_<domain>)
    with events <fn>_enter / <fn>_leave; nrr_lttng_gen.c: the probes and
    nrr_lt_<fn>_enter/_leave(), which compute each value as the native
    encoders do (field_value) and emit the event."""
    doms = [d for d in api.domains if any(fn.domain == d for fn in api.fns)]
    gen = '/* Generated by formats/gen/ncclrr_gen.py --emit lttng from formats/api/: do not edit. */'
    h = [gen,
         '/*',
         ' * LTTng-UST tracepoint providers ncclrr_<domain>, events <fn>_enter and',
         ' * <fn>_leave.  Included as is: the event value structs and the',
         ' * nrr_lt_* prototypes.  With NRR_LT_CUR = a domain number (below) it is',
         ' * the tracepoint provider header of that domain (nrr_lttng_gen.c',
         ' * includes it once per domain).',
         ' */',
         '#ifndef NCCLRR_LTTNG_GEN_ONCE', '#define NCCLRR_LTTNG_GEN_ONCE', '',
         '#include <stddef.h>', '#include <stdint.h>', '#include "nrr_api_gen.h"', '']
    for i, d in enumerate(doms, 1):
        h.append(f'#define NRR_LT_DOMAIN_{d} {i}')
    nlog = len(doms) + 1   # ncclrr_log: NCCL's log lines and the run metadata
    h.append(f'#define NRR_LT_DOMAIN_log {nlog}')
    h += ['', '/* what one event records: integers as int64/uint64 by wire type, byte',
          ' * values as their captured bytes (<= NRR_BYTES_CAP_DEFAULT) and full length */']
    protos = []
    for fn in api.fns:
        params = params_c(fn)
        ret_param = '' if fn.ret == 'void' else f'{fn.ret_type} nrr_ret, '
        protos.append(f'void nrr_lt_{fn.name}_enter({params or "void"});')
        protos.append(f'void nrr_lt_{fn.name}_leave({ret_param}int nrr_err{", " + params if params else ""});')
        for when in ('enter', 'leave'):
            members = ['\tint64_t ret;', '\tint32_t err;'] if when == 'leave' else []
            for a in lttng_fields(api, fn, when):
                w = WIRE[a.fmt]
                if w == 'U':
                    members.append(f'\tuint64_t {a.name};')
                elif w == 'S':
                    members.append(f'\tint64_t {a.name};')
                else:
                    members.append(f'\tconst uint8_t *{a.name};')
                    members.append(f'\tuint32_t {a.name}_n;  /* captured */')
                    members.append(f'\tuint64_t {a.name}_len;  /* full length */')
            if when == 'leave' and fn.poll:
                members.append('\tuint8_t notready;  /* the poll answer "not ready" */')
            if not members:
                members = ['\tchar nrr_unused;']
            h += [f'struct nrr_lt_{fn.name}_{when} {{'] + members + ['};']
    h += ['', '/* Emit <fn>_enter / <fn>_leave: same parameters as nrr_rec_<fn>_enter /',
          ' * _leave without the nrr_tls.  libncclrr-trace-lttng.so defines them. */',
          'extern const int nrr_lt_present;']
    h += protos + ['void nrr_lt_log(unsigned level, const char *text, size_t len);',
                   'void nrr_lt_meta(const char *text, size_t len);']
    h += ['', '#endif /* NCCLRR_LTTNG_GEN_ONCE */', '',
          '#ifdef NRR_LT_CUR', '#undef LTTNG_UST_TRACEPOINT_PROVIDER']
    for i, d in enumerate(doms + ['log'], 1):
        h.append(f'#{"if" if i == 1 else "elif"} NRR_LT_CUR == {i}')
        h.append(f'#define LTTNG_UST_TRACEPOINT_PROVIDER ncclrr_{d}')
    h += ['#else', '#error "NRR_LT_CUR is not a domain number (NRR_LT_DOMAIN_*)"', '#endif',
          '#undef LTTNG_UST_TRACEPOINT_INCLUDE', '#define LTTNG_UST_TRACEPOINT_INCLUDE "nrr_lttng_gen.h"', '']
    for i, d in enumerate(doms, 1):
        guard = f'NCCLRR_LTTNG_GEN_H_{i}'
        h += [f'#if NRR_LT_CUR == {i} && (!defined({guard}) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ))',
              f'#define {guard}', '#include <lttng/tracepoint.h>', '']
        for fn in api.fns:
            if fn.domain != d:
                continue
            for when in ('enter', 'leave'):
                fields = []
                if when == 'leave':
                    fields += ['lttng_ust_field_integer(int64_t, ret, nrr_f->ret)',
                               'lttng_ust_field_integer(int32_t, err, nrr_f->err)']
                    if fn.poll:
                        fields.append('lttng_ust_field_integer(uint8_t, notready, nrr_f->notready)')
                for a in lttng_fields(api, fn, when):
                    w = WIRE[a.fmt]
                    if w == 'U':
                        fields.append(f'lttng_ust_field_integer(uint64_t, {a.name}, nrr_f->{a.name})')
                    elif w == 'S':
                        fields.append(f'lttng_ust_field_integer(int64_t, {a.name}, nrr_f->{a.name})')
                    else:
                        fields.append(f'lttng_ust_field_sequence_hex(uint8_t, {a.name}, nrr_f->{a.name}, uint32_t, nrr_f->{a.name}_n)')
                        fields.append(f'lttng_ust_field_integer(uint64_t, {a.name}_len, nrr_f->{a.name}_len)')
                h.append(f'LTTNG_UST_TRACEPOINT_EVENT(ncclrr_{d}, {fn.name}_{when},')
                h.append(f'\tLTTNG_UST_TP_ARGS(const struct nrr_lt_{fn.name}_{when} *, nrr_f),')
                h.append('\tLTTNG_UST_TP_FIELDS(' + ('\n\t\t' + '\n\t\t'.join(fields) if fields else '') + '))')
        h += ['', f'#endif /* domain {d} */', '']
    guard = f'NCCLRR_LTTNG_GEN_H_{nlog}'
    h += [f'#if NRR_LT_CUR == {nlog} && (!defined({guard}) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ))',
          f'#define {guard}', '#include <lttng/tracepoint.h>', '',
          '/* a log line (level: NCCL_DEBUG level, 1 version .. 5 trace) */',
          'LTTNG_UST_TRACEPOINT_EVENT(ncclrr_log, line,',
          '\tLTTNG_UST_TP_ARGS(unsigned, nrr_level, const char *, nrr_text, size_t, nrr_len),',
          '\tLTTNG_UST_TP_FIELDS(',
          '\t\tlttng_ust_field_integer(uint32_t, level, nrr_level)',
          '\t\tlttng_ust_field_sequence_text(char, text, nrr_text, uint32_t, nrr_len)))',
          '/* "key=value" lines of the run metadata */',
          'LTTNG_UST_TRACEPOINT_EVENT(ncclrr_log, meta,',
          '\tLTTNG_UST_TP_ARGS(const char *, nrr_text, size_t, nrr_len),',
          '\tLTTNG_UST_TP_FIELDS(',
          '\t\tlttng_ust_field_sequence_text(char, text, nrr_text, uint32_t, nrr_len)))',
          f'#endif /* provider log */', '']
    h += ['#include <lttng/tracepoint-event.h>', '#endif /* NRR_LT_CUR */']

    c = [gen, '#include <stdlib.h>', '#include <string.h>', '',
         '#define LTTNG_UST_TRACEPOINT_CREATE_PROBES', '#define LTTNG_UST_TRACEPOINT_DEFINE']
    for i, d in enumerate(doms + ['log'], 1):
        c += [f'#define NRR_LT_CUR {i}', '#include "nrr_lttng_gen.h"', '#undef NRR_LT_CUR']
    c += ['', 'const int nrr_lt_present = 1;', '',
          'void nrr_lt_log(unsigned level, const char *text, size_t len)', '{',
          '\tlttng_ust_tracepoint(ncclrr_log, line, level, text, len > 65535 ? 65535 : len);', '}', '',
          'void nrr_lt_meta(const char *text, size_t len)', '{',
          '\tlttng_ust_tracepoint(ncclrr_log, meta, text, len > 65535 ? 65535 : len);', '}', '',
          '/* payloads are cut as in the native backend (NCCLRR_PAYLOAD) */',
          'static size_t nrr_lt_payload = NRR_BYTES_CAP_DEFAULT;',
          '__attribute__((constructor)) static void nrr_lt_init(void)', '{',
          '\tconst char *p = getenv("NCCLRR_PAYLOAD");',
          '\tchar *end;',
          '\tunsigned long v = p && *p ? strtoul(p, &end, 10) : NRR_BYTES_CAP_DEFAULT;',
          '\tif (p && *p && !*end && v <= NRR_BYTES_CAP_DEFAULT)',
          '\t\tnrr_lt_payload = v;', '}', '',
          '/* a non-NULL source for empty sequences */',
          'static const uint8_t nrr_lt_empty[1];', '']
    for fn in api.fns:
        params = params_c(fn)
        ret_param = '' if fn.ret == 'void' else f'{fn.ret_type} nrr_ret, '
        sigs = {'enter': f'void nrr_lt_{fn.name}_enter({params or "void"})',
                'leave': f'void nrr_lt_{fn.name}_leave({ret_param}int nrr_err{", " + params if params else ""})'}
        for when in ('enter', 'leave'):
            args = lttng_fields(api, fn, when)
            body = [sigs[when], '{']
            tpname = f'ncclrr_{fn.domain}, {fn.name}_{when}'
            used = {a.name for a in args}
            for a in fn.args:
                if a.name not in used:
                    body.append(f'\t(void){a.name};')
            body.append(f'\tif (!lttng_ust_tracepoint_enabled({tpname}))')
            body.append('\t\treturn;')
            prep, sets = [], []
            if when == 'leave':
                sets += [f'\tnrr_f.ret = {ret_expr(fn)};', '\tnrr_f.err = (int32_t)nrr_err;']
                if fn.poll:
                    sets.append(f'\tnrr_f.notready = ({notready_expr(api, fn)}) ? 1 : 0;')
            for a in args:
                pr, w, val = field_value(api, fn, a, when)
                prep += pr
                if w in ('U', 'S'):
                    sets.append(f'\tnrr_f.{a.name} = {val};')
                else:
                    ptr, n = val
                    sets.append(f'\tnrr_f.{a.name} = {ptr} ? (const uint8_t *){ptr} : nrr_lt_empty;')
                    cap = 'nrr_lt_payload' if a.fmt in ('buf', 'iov') else 'NRR_BYTES_CAP_DEFAULT'
                    sets.append(f'\tnrr_f.{a.name}_n = (uint32_t)({n} < {cap} ? {n} : {cap});')
                    sets.append(f'\tnrr_f.{a.name}_len = (uint64_t){n};')
            body += ['\t' + l for l in prep]
            body.append(f'\tstruct nrr_lt_{fn.name}_{when} nrr_f;')
            body.append('\tmemset(&nrr_f, 0, sizeof(nrr_f));')
            body += sets
            body.append(f'\tlttng_ust_do_tracepoint({tpname}, &nrr_f);')
            body.append('}')
            c += body + ['']
    write(os.path.join(outdir, 'nrr_lttng_gen.h'), '\n'.join(h) + '\n')
    write(os.path.join(outdir, 'nrr_lttng_gen.c'), '\n'.join(c))


def emit_list(api, outdir):
    for fn in api.fns:
        flags = ','.join(x for x, on in (('blocking', fn.blocking), ('poll', fn.poll), ('instant', fn.instant)) if on) or '-'
        print(f'{fn.domain} {fn.name} {len([a for a in fn.args if a.fmt != "skip"])} {flags}')


def write(path, text):
    try:
        with open(path, encoding='utf-8') as f:
            if f.read() == text:
                return
    except OSError:
        pass
    with open(path, 'w', encoding='utf-8') as f:
        f.write(text)


# ---------------------------------------------------------------- wrappers

MISSING_RET = {'curesult': '999', 'cudart': '999', 'nccl': '2', 'nvml': '12', 'errno': '-1',
               'poserr': 'ENOSYS', 'ptr': 'NULL', 'int': '-1'}


def args_c(fn):
    return ', '.join(a.name for a in fn.args)


def emit_wrappers(api, outdir):
    """nrr_wrap_gen.h: nrr_trace_<fn>_enter/_leave for every function (the
    backend dispatch hooks call); nrr_wrap_gen.c: the exported wrappers of
    the functions of domains with lib= (not marked hook) and the table the
    dlsym / cuGetProcAddress hooks look names up in."""
    h = ['/* Generated by formats/gen/ncclrr_gen.py from formats/api/: do not edit. */',
         '#ifndef NCCLRR_WRAP_GEN_H', '#define NCCLRR_WRAP_GEN_H', '',
         '#include <errno.h>', '#include "nrr_api_gen.h"', '#include "trace.h"', '',
         '/* One entry per wrapped function, sorted by name. */',
         'typedef struct nrr_wrap_ent {', '\tconst char *name;', '\tuint32_t fn;',
         '\tuint8_t domain;      /* index in nrr_wrap_libs */', '\tvoid *wrapper;',
         '\tvoid **real;         /* the real function, resolved lazily */', '} nrr_wrap_ent;',
         'extern const nrr_wrap_ent nrr_wrap_table[];', 'extern const size_t nrr_wrap_count;',
         '/* The libraries (sonames) whose functions are wrapped. */',
         'extern const char *const nrr_wrap_libs[];', 'extern const size_t nrr_wrap_nlibs;',
         '/* Resolve @name in the next library (RTLD_NEXT) into *@slot. */',
         'void *nrr_resolve(const char *name, void **slot);', '']
    exported_defs = []
    libs = []
    for d in api.domains.values():
        if d.lib and d.lib not in libs:
            libs.append(d.lib)
    for fn in api.fns:
        params = params_c(fn)
        pl = params if params else 'void'
        args = args_c(fn)
        ret_param = '' if fn.ret == 'void' else f'{fn.ret_type} nrr_ret, '
        ret_arg = '' if fn.ret == 'void' else 'nrr_ret, '
        h.append(f'extern void nrr_lt_{fn.name}_enter({pl}) __attribute__((weak));')
        h.append(f'extern void nrr_lt_{fn.name}_leave({ret_param}int nrr_err{", " + params if params else ""}) __attribute__((weak));')
        # functions reached only through tables (ncclNet, proxy: no lib=) are
        # recorded by plugins loaded next to the tracer: exported from it
        exported = not api.domains[fn.domain].lib
        for when, sig, call_rec, call_lt in (
                ('enter', f'static inline void nrr_trace_{fn.name}_enter({pl})',
                 f'nrr_rec_{fn.name}_enter(nrrt{", " + args if args else ""})',
                 f'nrr_lt_{fn.name}_enter({args})'),
                ('leave', f'static inline void nrr_trace_{fn.name}_leave({ret_param}int nrr_err{", " + params if params else ""})',
                 f'nrr_rec_{fn.name}_leave(nrrt, {ret_arg}nrr_err{", " + args if args else ""})',
                 f'nrr_lt_{fn.name}_leave({ret_arg}nrr_err{", " + args if args else ""})')):
            body = ['{', '\tint nrr_saved = errno;', '\tnrr_tls *nrrt = nrr_trace_begin();',
                    '\tif (nrrt) {', f'\t\t{call_rec};', '\t\tnrr_trace_end();',
                    f'\t}} else if (nrr_trace_backend == NRR_BACKEND_LTTNG && nrr_lt_{fn.name}_{when} && nrr_trace_lttng_begin()) {{',
                    f'\t\t{call_lt};', '\t\tnrr_trace_end();', '\t}', '\terrno = nrr_saved;', '}']
            if exported:
                proto = sig.replace('static inline ', '')
                h.append(proto + ';')
                exported_defs.append('NRR_EXPORT ' + proto)
                exported_defs += body + ['']
            else:
                h += [sig] + body
    h += ['', '#endif']

    c = ['/* Generated by formats/gen/ncclrr_gen.py from formats/api/: do not edit. */',
         '#include "nrr_wrap_gen.h"',
         '#include "tracer_internal.h"   /* the filter/before/after hooks */', '',
         '#define NRR_EXPORT __attribute__((visibility("default")))', '']
    c += exported_defs
    wrapped = sorted((fn for fn in api.fns if api.domains[fn.domain].lib and not fn.hook),
                     key=lambda f: f.name)
    for fn in wrapped:
        params = params_c(fn)
        pl = params if params else 'void'
        args = args_c(fn)
        void = fn.ret == 'void'
        fp = f'{fn.ret_type} (*)({pl})'
        c.append(f'static {fn.ret_type} (*real_{fn.name})({pl});')
        c.append(f'NRR_EXPORT {fn.ret_type} nrr_w_{fn.name}({pl}) __asm__("{fn.name}");')
        c += [f'{fn.ret_type} nrr_w_{fn.name}({pl})', '{',
              f'\t{fn.ret_type} (*real)({pl}) = __atomic_load_n(&real_{fn.name}, __ATOMIC_RELAXED);',
              '\tif (__builtin_expect(!real, 0)) {',
              f'\t\treal = ({fp})nrr_resolve("{fn.name}", (void **)&real_{fn.name});',
              '\t\tif (!real) {']
        if fn.ret in ('errno', 'ptr', 'poserr'):
            c.append('\t\t\terrno = ENOSYS;')
        c.append('\t\t\treturn;' if void else f'\t\t\treturn ({fn.ret_type}){MISSING_RET[fn.ret]};')
        c += ['\t\t}', '\t}']
        if fn.guard:
            if fn.ret != 'errno':
                raise ApiError(f'{fn.where}: guard= is for functions that fail with -1 and errno')
            c += [f'\tint nrr_refuse = {fn.guard};', '\tif (__builtin_expect(nrr_refuse != 0, 0)) {',
                  '\t\terrno = nrr_refuse;', f'\t\treturn ({fn.ret_type})-1;', '\t}']
        if fn.filter:
            c += [f'\tif (!({fn.filter}))',
                  f'\t\treturn real({args});' if not void else f'\t\t{{ real({args}); return; }}']
        if fn.before:
            c.append(f'\t{fn.before};')
        c.append(f'\tnrr_trace_{fn.name}_enter({args});')
        if void:
            c += [f'\treal({args});', '\tint nrr_err = errno;',
                  f'\tnrr_trace_{fn.name}_leave(nrr_err{", " + args if args else ""});']
        else:
            c += [f'\t{fn.ret_type} nrr_ret = real({args});', '\tint nrr_err = errno;',
                  f'\tnrr_trace_{fn.name}_leave(nrr_ret, nrr_err{", " + args if args else ""});']
        if fn.after:
            c.append(f'\t{fn.after};')
        c.append('\terrno = nrr_err;')
        c += ['\treturn;' if void else '\treturn nrr_ret;', '}', '']
    c.append('const char *const nrr_wrap_libs[] = {')
    c += [f'\t"{l}",' for l in libs]
    c += ['};', f'const size_t nrr_wrap_nlibs = {len(libs)};', '',
          'const nrr_wrap_ent nrr_wrap_table[] = {']
    for fn in wrapped:
        c.append(f'\t{{ "{fn.name}", NRR_FN_{fn.name}, {libs.index(api.domains[fn.domain].lib)}, '
                 f'(void *)nrr_w_{fn.name}, (void **)&real_{fn.name} }},')
    c += ['};', f'const size_t nrr_wrap_count = {len(wrapped)};', '']
    write(os.path.join(outdir, 'nrr_wrap_gen.h'), '\n'.join(h) + '\n')
    write(os.path.join(outdir, 'nrr_wrap_gen.c'), '\n'.join(c))



# ---------------------------------------------------------------- replay

REPLAY_DOMAINS = ('cuda_driver', 'nvml', 'verbs')


def complete_types(api):
    """Type names whose size the generated code may take: scalars, byte
    types and typedefs the `c` lines define with a body."""
    names = set(api.scalars) | set(api.bytetypes)
    for line in api.c_lines:
        m = re.search(r'\}\s*([A-Za-z_]\w*)\s*;\s*$', line)
        if m:
            names.add(m.group(1))
        m = re.match(r'^typedef\s+[^{}()]*?\b([A-Za-z_]\w*)\s*;\s*$', line.strip())
        if m and '{' not in line and 'struct' not in line and 'union' not in line:
            names.add(m.group(1))
        m = re.match(r'^typedef\s+(struct|union)\s+\w+\s*\*\s*([A-Za-z_]\w*)\s*;', line.strip())
        if m:
            names.add(m.group(2))
    return names


def replay_unsupported(api, fn):
    """Why fn cannot be called from a recording, or None."""
    if fn.hook:
        return (f'{fn.name} is recorded by hand-written hook code (a data-path op reached through '
                f'context->ops, not an exported symbol): no prototype to call')
    for a in fn.args:
        if a.fmt == 'skip':
            return f'parameter {a.name} is not recorded (skip)'
        if a.dir == 'inout' and a.fmt == 'x':
            return f'parameter {a.name} ({a.ctype}) is read and written but only its address was recorded'
    return None


def emit_replay(api, outdir):
    """nrr_replay_gen.h/.c: for every function of the domains cuda_driver,
    nvml and verbs, a call thunk (the exact prototype, arguments passed as
    64-bit slots) and an out-reader (the pointees of out parameters read as
    the tracer records them), with per-parameter classes and sizes, so that
    replayer/engine/rcuda.c can rebuild a call from a recording."""
    gen = '/* Generated by formats/gen/ncclrr_gen.py --emit replay from formats/api/: do not edit. */'
    h = [gen, '#ifndef NCCLRR_REPLAY_GEN_H', '#define NCCLRR_REPLAY_GEN_H', '',
         '#include "nrr_api_gen.h"', '',
         '/* How a C parameter is built from its recorded value. */',
         'enum nrr_rc_cls {',
         '\tNRR_RC_VAL = 0,      /* a scalar or handle passed by value: the slot is the value */',
         '\tNRR_RC_VALBYTES = 1, /* a struct passed by value (IPC handles): the slot points at its bytes */',
         '\tNRR_RC_PTR = 2,      /* a pointer: the slot is the pointer rcuda.c built */',
         '};', '',
         'typedef void (*nrr_rc_fptr)(void);', '',
         'typedef struct nrr_rc_param {',
         '\tconst char *name;',
         '\tuint8_t cls;      /* enum nrr_rc_cls */',
         '\tuint8_t outaddr;  /* an out struct pointer recorded by its address (not its content) */',
         '\tuint8_t custom;   /* recorded through a custom encoder: the bytes are not the pointee */',
         '\tuint32_t size;    /* VALBYTES: sizeof the type; PTR: sizeof the pointee, 0 when void or incomplete */',
         '} nrr_rc_param;', '',
         'typedef struct nrr_rc_fn {',
         '\tconst char *name;',
         '\tconst char *domain;',
         '\tconst char *unsupported; /* NULL, or why the call cannot be replayed */',
         '\tconst char *ret_kind;    /* pointer results that are handles: their kind, else NULL */',
         '\t/* call @f (the real function) with the C parameters in slots @a; the',
         '\t * result as the LEAVE record stores it */',
         '\tint64_t (*call)(nrr_rc_fptr f, const uint64_t *a);',
         '\t/* v[i] = the value the tracer records for out parameter i (pointer in a[i]) */',
         '\tvoid (*read)(const uint64_t *a, uint64_t *v);',
         '\tuint8_t nparams;',
         '\tconst nrr_rc_param *params;',
         '} nrr_rc_fn;', '',
         '/* sorted by name */',
         'extern const nrr_rc_fn nrr_rc_fns[];', 'extern const size_t nrr_rc_nfns;', '',
         '#endif']
    c = [gen, '#include "nrr_replay_gen.h"', '',
         '#pragma GCC diagnostic ignored "-Wunused-variable"', '']
    complete = complete_types(api)
    fns = sorted((fn for fn in api.fns if fn.domain in REPLAY_DOMAINS), key=lambda f: f.name)
    for fn in fns:
        why = replay_unsupported(api, fn)
        params = []
        for i, a in enumerate(fn.args):
            t = norm_type(a.ctype)
            stars = t.count('*')
            base = t.rstrip('*').strip()
            outaddr = 0
            if stars == 0:
                if base in api.bytetypes:
                    cls, size = 'NRR_RC_VALBYTES', f'sizeof({base})'
                else:
                    cls, size = 'NRR_RC_VAL', '0'
            else:
                cls = 'NRR_RC_PTR'
                if stars >= 2:
                    size = 'sizeof(void *)'
                elif base in complete and base != 'void':
                    size = f'sizeof({base})'
                else:
                    size = '0'
                if a.dir in ('out', 'inout') and a.fmt == 'x' and stars == 1 and base not in api.scalars:
                    outaddr = 1
            params.append((a, cls, size, outaddr))
        if params:
            c.append(f'static const nrr_rc_param nrr_rc_p_{fn.name}[] = {{')
            for a, cls, size, outaddr in params:
                c.append(f'\t{{ "{a.name}", {cls}, {outaddr}, {int(a.fmt == "custom")}, (uint32_t)({size}) }},')
            c.append('};')
        if why:
            c.append('')
            continue
        # the call thunk
        c.append(f'static int64_t nrr_rc_call_{fn.name}(nrr_rc_fptr nrr_f, const uint64_t *nrr_a)')
        c.append('{')
        for i, (a, cls, size, outaddr) in enumerate(params):
            if cls == 'NRR_RC_VALBYTES':
                c.append(f'\t{a.ctype} {a.name} = *(const {norm_type(a.ctype)} *)(uintptr_t)nrr_a[{i}];')
            else:
                c.append(f'\t{a.ctype} {a.name} = ({a.ctype})(uintptr_t)nrr_a[{i}];')
        if not params:
            c.append('\t(void)nrr_a;')
        pl = params_c(fn) or 'void'
        call = f'(({fn.ret_type} (*)({pl}))nrr_f)({args_c(fn)})'
        if fn.ret == 'void':
            c += [f'\t{call};', '\treturn 0;']
        elif norm_type(fn.ret_type).endswith('*'):
            c.append(f'\treturn (int64_t)(intptr_t){call};')
        else:
            c.append(f'\treturn (int64_t){call};')
        c.append('}')
        # the out reader: the pointee values exactly as the encoders record them
        c.append(f'static void nrr_rc_read_{fn.name}(const uint64_t *nrr_a, uint64_t *nrr_v)')
        c.append('{')
        c += ['\t(void)nrr_a;', '\t(void)nrr_v;']
        for i, (a, cls, size, outaddr) in enumerate(params):
            if a.dir not in ('out', 'inout') or WIRE[a.fmt] == 'B':
                continue
            _, w, val = field_value(api, fn, a, 'leave')
            c.append('\t{')
            c.append(f'\t\t{a.ctype} {a.name} = ({a.ctype})(uintptr_t)nrr_a[{i}];')
            c.append(f'\t\tnrr_v[{i}] = (uint64_t)({val});')
            c.append('\t}')
        c.append('}')
        c.append('')
    c.append('const nrr_rc_fn nrr_rc_fns[] = {')
    for fn in fns:
        why = replay_unsupported(api, fn)
        rk = 'NULL'
        rt = norm_type(fn.ret_type)
        # a pointer result to a ptrhandle type (ibv_alloc_pd's struct ibv_pd *),
        # or to one declared as a pointer (ibv_get_device_list's list)
        if fn.ret == 'ptr' and rt.endswith('*') and rt[:-1].strip() in api.ptrhandles:
            rk = f'"{api.ptrhandles[rt[:-1].strip()]}"'
        wq = 'NULL' if not why else '"' + why.replace('"', '\\"') + '"'
        call = 'NULL' if why else f'nrr_rc_call_{fn.name}'
        rd = 'NULL' if why else f'nrr_rc_read_{fn.name}'
        ps = f'nrr_rc_p_{fn.name}' if fn.args else 'NULL'
        c.append(f'\t{{ "{fn.name}", "{fn.domain}", {wq}, {rk}, {call}, {rd}, {len(fn.args)}, {ps} }},')
    c += ['};', f'const size_t nrr_rc_nfns = {len(fns)};', '']
    write(os.path.join(outdir, 'nrr_replay_gen.h'), '\n'.join(h) + '\n')
    write(os.path.join(outdir, 'nrr_replay_gen.c'), '\n'.join(c))


# Emitters: each is f(api, outdir). Wrappers (tracer), LTTng-UST providers
# and the replay table are added here by the issues that need them.
def emit_benign(api, outdir):
    """nrr_benign_gen.c: the failures a healthy run has too (benign=), by
    function and by domain, read by nrr_call_benign() (formats/callfmt.c)."""
    c = ['/* Generated by formats/gen/ncclrr_gen.py --emit benign from formats/api/: do not edit. */',
         '#include <errno.h>', '#include "callfmt.h"', '',
         'const nrr_benign_rule nrr_benign_rules[] = {']

    def row(fn_name, dom, rule, owner):
        why, kind, vals = rule
        if len(vals) > 8:
            raise ApiError(f'{owner.where}: benign: at most 8 values')
        if kind == 'ret':
            nums = [str(enum_value(api, owner, v)) for v in vals]
        else:
            nums = vals
        fn_c = f'"{fn_name}"' if fn_name else 'NULL'
        dom_c = f'"{dom}"' if dom else 'NULL'
        return (f'\t{{ {fn_c}, {dom_c}, {"true" if kind == "err" else "false"}, "{why}", "{BENIGN_WHY[why]}", '
                f'{len(nums)}, {{ {", ".join(nums)} }} }},')
    for fn in api.fns:
        for rule in fn.benign:
            c.append(row(fn.name, None, rule, fn))
    for d in api.domains.values():
        for rule in d.benign:
            owner = Fn(d.name, 'int', f'domain {d.name}', [], d.where)
            c.append(row(None, d.name, rule, owner))
    c += ['};', 'const size_t nrr_benign_nrules = sizeof(nrr_benign_rules) / sizeof(nrr_benign_rules[0]);', '']
    write(os.path.join(outdir, 'nrr_benign_gen.c'), '\n'.join(c))


def emit_semantics(api, outdir):
    """nrr_sem_gen.c: each function's call semantics (sem_tokens()), by
    name, and each return convention's: what a reader gives a function of
    a trace whose schema does not carry them (written before they were)."""
    c = ['/* Generated by formats/gen/ncclrr_gen.py --emit semantics from formats/api/: do not edit. */',
         '#include <stddef.h>', '#include "nrt_internal.h"', '',
         '/* the names of sem=\'s roles, in the order of enum nrr_role / nrr_argrole (nrt.h) */',
         'const char *const nrr_sem_roles[NRR_ROLE_N] = {']
    c += [f'\t[NRR_ROLE_{r.upper()}] = "{r}",' for r in ROLES]
    c += ['};', 'const char *const nrr_sem_argroles[NRR_ARGROLE_N] = {']
    c += [f'\t[NRR_ARG_{r.upper()}] = "{r}",' for r in ARG_ROLES]
    c += ['};', f'_Static_assert(NRR_ROLE_N == {len(ROLES)} && NRR_ARGROLE_N == {len(ARG_ROLES)}, '
          '"enum nrr_role / nrr_argrole (formats/nrt.h) and ROLES / ARG_ROLES (formats/gen/ncclrr_gen.py) differ");', '',
          '/* sorted by name (strcmp) */', 'const nrr_sem_builtin nrr_sem_builtin_fns[] = {']
    for fn in sorted(api.fns, key=lambda f: f.name.encode()):
        if fn.sem:
            c.append(f'\t{{ "{fn.name}", "{",".join(fn.sem)}" }},')
    c += ['};', 'const size_t nrr_sem_builtin_nfns = sizeof(nrr_sem_builtin_fns) / sizeof(nrr_sem_builtin_fns[0]);',
          '', '/* by return convention (conv lines), for a function this build does not describe */',
          'const nrr_sem_builtin nrr_sem_builtin_convs[] = {']
    for conv in sorted(api.convs):
        probe = Fn('-', 'int', f'conv {conv}', [], '-')
        probe.ret = conv
        toks = sem_tokens(api, probe)
        c.append(f'\t{{ "{conv}", "{",".join(toks)}" }},')
    c += ['};', 'const size_t nrr_sem_builtin_nconvs = sizeof(nrr_sem_builtin_convs) / sizeof(nrr_sem_builtin_convs[0]);', '']
    write(os.path.join(outdir, 'nrr_sem_gen.c'), '\n'.join(c))


def emit_schema(api, outdir):
    sys.stdout.write(schema_text(api))


def emit_cudart_errors(api, outdir):
    """The runtime's error names come from the enum the traces decode
    cudaError_t with, so a name the fake runtime prints is the name dump shows."""
    e = api.enums.get('cudaError_t')
    if e is None:
        raise ApiError('enum cudaError_t is not described (formats/api/cuda_runtime.api)')
    h = ['/* Generated by formats/gen/ncclrr_gen.py --emit cudart-errors from formats/api/: do not edit. */',
         '#ifndef NRR_CUDART_ERRORS_GEN_H', '#define NRR_CUDART_ERRORS_GEN_H',
         'static const struct { int code; const char *name; } nrr_cudart_errors[] = {']
    h += [f'\t{{ {v}, "{n}" }},' for n, v in e.values]
    h += ['};', '#endif', '']
    write(os.path.join(outdir, 'nrr_cudart_errors_gen.h'), '\n'.join(h))


EMITTERS = {'semantics': emit_semantics, 'benign': emit_benign, 'cudart-errors': emit_cudart_errors, 'encoders': emit_encoders, 'list': emit_list, 'schema': emit_schema, 'lttng': emit_lttng,
            'wrappers': emit_wrappers, 'replay': emit_replay}


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
