# SPDX-License-Identifier: MIT
"""api_model.py - the model of the API description (formats/api/*.api).

parse_files() reads the files into an Api (Domain, Fn, Arg, Enum);
resolve() fills in what each function's defaults and attributes imply
(encodings, return conventions, call semantics). The emitters
(emit_*.py) only read the model. The language is documented in
formats/api/README.md.
"""
import errno  # noqa: F401 (errno names in poll=err: and benign=)
import os
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
        self.msgs = {}    # symbol -> message ("SYMBOL = VALUE "MESSAGE""): what the library says for it


class Arg:
    def __init__(self, ctype, name):
        self.ctype, self.name = ctype, name
        self.dir = None
        self.fmt = None      # u i x bool enum flags handle fd str bytes buf sockaddr custom skip
        self.kind = None     # table, handle kind, byte count, length expr or custom name
        self.hflag = None    # create / consume
        self.explicit = False
        self.where = None    # file:line of its description line, if any
        self.result = None   # C function giving the value from the call's result ("result" lines)
        self.failed = None   # (FIELD, NFIELDS, TABLE): failed=FIELD/NFIELDS:TABLE, an entry's error status
        self.runid = None    # runid[=FIELDS]: a number each run chooses anew; FIELDS ('1', '5/6'): which of its uvars

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
        self.since = None     # CUDA version whose ABI this symbol is (since=): the fake driver exports it
        self.fake = False     # the domain's fake library exports it (fake, or since=)
        self.filter = None    # C expression: record only when true (wrappers)
        self.guard = None     # C expression: an errno refuses the call before it runs (wrappers)
        self.before = None    # C expression run before the call is recorded (wrappers)
        self.after = None     # C expression run after the real call (wrappers)
        self.hook = False     # wrapper written by hand (tracer/), not generated
        self.fault = False    # the fake's fault switch counts it by name and can make it fail (fault)
        self.unread = []      # [(PARAM, WHEN, [values])]: PARAM is not read when WHEN has one of the values
        self.benign = []      # [(why, 'ret'|'err', [values], (PARAM, N) or None)]: failures a healthy run has too
        self.role = None      # what the call does (ROLES): connect, recv, proxy_req, ...
        self.argroles = []    # [(ROLE, PARAM)]: which parameter is the fd, the address, ...
        self.notready = None  # ('ret'|'err', [values]): answers that mean "not ready" besides poll=
        self.transient = None  # ('ret'|'err', [values]): errors that are no failure (replaces conv's)
        self.sem = []         # the semantics' schema tokens (resolve())
        self.results = []     # [Arg]: values read from the returned object ("result" lines), out fields
        self.id = 0


class Entry:
    """entry RETTYPE NAME(PARAMS) [since=VERSION]: an entry point a fake
    library (the CUDA driver, NVML) exports that the tracer does not
    describe (no encodings, no semantics: only its prototype and, for the
    driver, the version of its ABI)."""
    def __init__(self, ret_type, name, args, since, where):
        self.ret_type, self.name, self.args, self.since, self.where = ret_type, name, args, since, where


class Domain:
    def __init__(self, name, where):
        self.name, self.where = name, where
        self.ret = None
        self.intret = None
        self.lib = None      # library the wrappers resolve the real symbols in
        self.benign = []     # as Fn.benign, for every function of the domain
        self.entries = []    # [Entry]: entry points the domain's fake serves, not traced ("entry" lines)


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


def struct_fields(api, tname):
    """The members of struct type @tname in the order a `c` line of the
    description declares them (`typedef struct [TAG] { ... } tname;`), as
    names; a member that is itself a struct or union counts as one. None
    when no `c` line gives the type a body (an opaque or library type)."""
    for line in api.c_lines:
        m = re.match(r'^\s*typedef\s+struct\s*\w*\s*\{(.*)\}\s*' + re.escape(tname) + r'\s*;\s*$', line)
        if not m:
            continue
        names, depth, cur = [], 0, ''
        for ch in m.group(1):
            depth += ch == '{'
            depth -= ch == '}'
            if depth == 0 and ch in ';,':
                d = re.sub(r'\[[^]]*\]', '', cur).strip()
                if d:
                    names.append(re.search(r'([A-Za-z_]\w*)\s*$', d).group(1))
                cur = ''
                continue
            cur += ch
        return names
    return None


def parse_since(v, where):
    """since=VERSION: a CUDA version as the driver numbers them (12050 = 12.5)."""
    if not re.match(r'^[1-9]\d{3,4}$', v):
        raise ApiError(f'{where}: since wants a CUDA version number such as 11040 (11.4), not "{v}"')
    return int(v)


def fn_base(name):
    """The name cuGetProcAddress is asked under: the symbol without its _vN ABI suffix."""
    return re.sub(r'_v\d+$', '', name)


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
                    m = re.match(r'^\s*([A-Za-z_]\w*)\s*=\s*(-?(?:0x[0-9a-fA-F]+|\d+))\s*(?:"([^"\\]*)")?\s*$', line)
                    if not m:
                        raise ApiError(f'{where}: expected "SYMBOL = VALUE" or "SYMBOL = VALUE \"MESSAGE\"" in enum {cur_enum.name}')
                    cur_enum.values.append((m.group(1), int(m.group(2), 0)))
                    if m.group(3) is not None:
                        cur_enum.msgs[m.group(1)] = m.group(3)
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
            elif kw == 'entry':
                if domain is None:
                    raise ApiError(f'{where}: entry before any "domain" line')
                m = re.match(r'^entry\s+(.+?)\b([A-Za-z_]\w*)\s*\(([^()]*)\)(?:\s+since=(\S+))?$', line.strip())
                if not m:
                    raise ApiError(f'{where}: expected "entry RETTYPE NAME(PARAMS) [since=VERSION]"')
                ret_type = re.sub(r'\s*\*\s*', '*', re.sub(r'\s+', ' ', m.group(1)).strip())
                since = parse_since(m.group(4), where) if m.group(4) is not None else None
                domain.entries.append(Entry(ret_type, m.group(2), split_params(m.group(3), where), since, where))
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


def parse_benign(v, where, fn=None):
    """benign=WHY:ret|err:V1|V2[:PARAM=N]: the optional PARAM=N (only on a
    function) makes the rule hold only for calls whose recorded PARAM is
    the number N (NCCL's dma-buf probe: ibv_reg_dmabuf_mr of fd -1)."""
    parts = v.split(':')
    if len(parts) not in (3, 4) or parts[0] not in BENIGN_WHY or parts[1] not in ('ret', 'err') or not parts[2]:
        raise ApiError(f'{where}: benign wants "benign=WHY:ret:V1|V2" or "benign=WHY:err:E1|E2", optionally '
                       f'followed by ":PARAM=N", with WHY one of {", ".join(sorted(BENIGN_WHY))}')
    vals = parts[2].split('|')
    if parts[1] == 'err' and not all(re.fullmatch(r'E[A-Z0-9]+', x) for x in vals):
        raise ApiError(f'{where}: benign=...:err: wants errno names (EADDRINUSE|...)')
    cond = None
    if len(parts) == 4:
        m = re.fullmatch(r'([A-Za-z_]\w*)=(-?[0-9]+)', parts[3])
        if not m:
            raise ApiError(f'{where}: benign=...:PARAM=N wants a parameter name and a number (fd=-1), '
                           f'got "{parts[3]}"')
        if fn is None:
            raise ApiError(f'{where}: benign=...:{parts[3]}: a parameter condition is for a function, '
                           f'not a domain')
        cond = (m.group(1), int(m.group(2)))
    return (parts[0], parts[1], vals, cond)


# unread=PARAM:WHEN:V1|V2: the call does not read PARAM when parameter WHEN
# has one of the values (numbers or C constants: fcntl's arg for F_GETFD),
# so the recorded value is whatever the caller's register held
# (nrr_call_arg_unread(), formats/callfmt.c)
def parse_unread(v, where):
    parts = v.split(':')
    vals = parts[2].split('|') if len(parts) == 3 else []
    if (len(parts) != 3 or not parts[0] or not parts[1] or not 1 <= len(vals) <= 8 or
            not all(re.fullmatch(r'[A-Za-z_][A-Za-z0-9_]*|-?[0-9]+', x) for x in vals)):
        raise ApiError(f'{where}: unread wants "unread=PARAM:WHEN:V1|V2" (1 to 8 numbers or C constants)')
    return (parts[0], parts[1], vals)


# role=ROLE: what a call does, for the tools that follow connections,
# waits and proxy RPCs (nrr_call_role(), formats/callfmt.h: same order)
ROLES = ['none', 'connect', 'accept', 'send', 'recv', 'poll', 'close', 'sock_setup', 'sock_pair', 'sock_info',
         'proxy_req', 'proxy_resp', 'cq_poll', 'net_test', 'sync', 'fd_export', 'fd_import', 'dev_open',
         'wr_send', 'wr_recv']
# arg=ROLE:PARAM: what a parameter is (nrr_fn_arg(), same order)
ARG_ROLES = ['fd', 'addr', 'fds', 'payload', 'id', 'local']


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
        elif attr == 'fault':
            fn.fault = True
        elif attr == 'fake':
            fn.fake = True
        elif attr.startswith('unread='):
            fn.unread.append(parse_unread(attr[7:], where))
        elif attr.startswith('benign='):
            fn.benign.append(parse_benign(attr[7:], where, fn))
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
        elif attr.startswith('since='):
            fn.since = parse_since(attr[6:], where)
            fn.fake = True
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


def parse_result_line(api, fn, words, where):
    """result NAME u|x FUNC: an out field NAME after the parameters, FUNC(the
    result) at leave (0 for a NULL result); FUNC is C in formats/api/custom.c."""
    runid = words[4:] == ['runid']
    if runid:
        words = words[:4]
    if len(words) != 4 or words[2] not in ('u', 'x') or not re.match(r'^[A-Za-z_]\w*$', words[3]):
        raise ApiError(f'{where}: expected "result NAME u|x FUNCTION [runid]"')
    if not norm_type(fn.ret_type).endswith('*'):
        raise ApiError(f'{where}: "result" needs a function returning a pointer ({fn.name} returns {fn.ret_type})')
    if any(a.name == words[1] for a in fn.args + fn.results):
        raise ApiError(f'{where}: {fn.name} already has a field "{words[1]}"')
    a = Arg('uint64_t', words[1])
    a.dir, a.fmt, a.result, a.explicit, a.where = 'out', words[2], words[3], True, where
    a.runid = '' if runid else None
    fn.results.append(a)


def parse_arg_line(api, fn, words, where):
    if words[:1] == ['result']:
        return parse_result_line(api, fn, words, where)
    failed = [w for w in words[3:] if w.startswith('failed=')]
    runid = [w for w in words[3:] if w == 'runid' or w.startswith('runid=')]
    words = [w for w in words if not w.startswith('failed=') and w not in runid] if words[:1] != ['skip'] else words
    if words[:1] == ['skip'] and len(words) != 2 or \
            words[:1] != ['skip'] and (len(words) not in (3, 4) or words[0] not in ('in', 'out', 'inout')):
        raise ApiError(f'{where}: expected "in|out|inout NAME ENCODING [create|consume] [failed=FIELD/NFIELDS:TABLE] '
                       '[runid[=FIELDS]]" or "skip NAME"')
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
    if failed:
        arg.failed = parse_failed(failed, arg, where)
    if runid:
        arg.runid = parse_runid(runid, arg, where)
    if len(words) == 4:
        if words[3] not in ('create', 'consume'):
            raise ApiError(f'{where}: unknown flag "{words[3]}"')
        arg.hflag = words[3]


def parse_failed(words, arg, where):
    """failed=FIELD/NFIELDS:TABLE on an out parameter recorded as a list of
    entries (a count byte, then NFIELDS unsigned LEB128 values each, as
    custom:wc): an entry whose field FIELD (from 0) is not 0 makes the call
    failed; TABLE names those values."""
    m = re.fullmatch(r'failed=(\d+)/(\d+):([A-Za-z_]\w*)', words[0])
    if len(words) > 1 or not m or not int(m.group(1)) < int(m.group(2)) <= 16:
        raise ApiError(f'{where}: failed wants "failed=FIELD/NFIELDS:TABLE" (FIELD < NFIELDS <= 16), once')
    if arg.dir != 'out' or SCHEMA_FMT.get(arg.fmt, arg.fmt) != 'bytes':
        raise ApiError(f'{where}: failed= is for an out parameter recorded as bytes (custom:NAME), '
                       f'not {arg.dir} {arg.fmt}')
    return (int(m.group(1)), int(m.group(2)), m.group(3))


def parse_runid(words, arg, where):
    """runid (a number recorded as u/x) or runid=F|F[/NFIELDS] (fields of a
    bytes value of uvars: a plain run, or entries of NFIELDS after a count
    byte, as custom:wc): numbers each run chooses anew (QP numbers, keys),
    which ncclrr diff compares as it compares handles."""
    m = re.fullmatch(r'runid(?:=(\d+(?:\|\d+)*)(?:/(\d+))?)?', words[0])
    bytes_ = SCHEMA_FMT.get(arg.fmt, arg.fmt) == 'bytes'
    fields = [int(f) for f in m.group(1).split('|')] if m and m.group(1) else []
    limit = int(m.group(2)) if m and m.group(2) else 16
    if len(words) > 1 or not m or bytes_ != bool(fields) or any(f >= limit for f in fields) or limit > 16:
        raise ApiError(f'{where}: runid wants "runid" on a number, or "runid=F|F[/NFIELDS]" (fields < NFIELDS <= 16) '
                       f'on a bytes value of uvars (custom:NAME), once')
    return m.group(1) + (f'/{m.group(2)}' if m.group(2) else '') if fields else ''


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
    for rule in fn.benign:
        cond = rule[3]
        if cond and not any(a.name == cond[0] and a.fmt in ('i', 'u', 'fd', 'enum', 'x', 'bool') and
                            a.dir in ('in', 'inout') for a in fn.args):
            raise ApiError(f'{fn.where}: {fn.name}: benign=...:{cond[0]}={cond[1]} names no parameter '
                           f'recorded as a number at enter')
    for pname, when, _ in fn.unread:
        for p in (pname, when):
            if not any(a.name == p and a.fmt != 'skip' for a in fn.args):
                raise ApiError(f'{fn.where}: {fn.name}: unread={pname}:{when}:... names no recorded parameter {p}')
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
    failed = [a for a in fn.args if a.failed]
    if len(failed) > 1:
        raise ApiError(f'{fn.where}: {fn.name}: failed= on more than one parameter')
    for a in failed:
        field, nfields, table = a.failed
        if table not in api.enums:
            raise ApiError(f'{a.where}: {fn.name}: failed=: unknown enum {table}')
        out.append(f'failed:out:{a.name}:{field}/{nfields}:{table}')
    runid = [a for a in fn.args + fn.results if a.runid is not None and a.fmt != 'skip']
    if len([a for a in runid if a.runid]) > 1:
        raise ApiError(f'{fn.where}: {fn.name}: runid=FIELDS on more than one parameter')
    for a in runid:
        out.append(f'runid:{a.name}' + (f':{a.runid}' if a.runid else ''))
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
    for a in fn.args + fn.results:
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
    used += [a.failed[2] for a in fn.args if a.failed]
    return sorted({names.index(n) for n in used})


def schema_text(api):
    out = 'ncclrr-schema 1\n' + ''.join(enum_text(e) for e in api.enums.values())
    out += ''.join(f'fn {fn.id} ' + fn_text(fn) for fn in api.fns)
    return out + 'end\n'
