# SenClaw trace hook for Python (installed by the engine for traced runs on
# backends that cannot trace from outside). It records what this process
# opens, starts and connects to as NDJSON lines in $SENCLAW_TRACE_FILE,
# which the engine collects after the run. It runs inside the sandbox: the
# code it watches can change or remove it, so its events are labelled
# "in-sandbox (can be tampered with)". It must never change the program's
# behaviour: every failure is swallowed.


def _senclaw_trace():
    import os
    import sys
    import time
    import json

    path = os.environ.get("SENCLAW_TRACE_FILE")
    if not path or not hasattr(sys, "addaudithook"):
        return
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError:
        return
    busy = [False]
    write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC

    def emit(kind, target, detail=""):
        line = json.dumps({"tsMs": int(time.time() * 1000), "pid": os.getpid(),
                           "kind": kind, "target": str(target), "detail": str(detail)})
        os.write(fd, (line + "\n").encode("utf-8", "replace"))

    def where(p, dir_fd=None):
        if isinstance(p, int):
            return None
        try:
            p = os.fsdecode(os.fspath(p))
        except Exception:
            return str(p)
        if dir_fd is None or dir_fd == -1:
            try:
                return os.path.abspath(p)
            except Exception:
                pass
        return p

    def address(a):
        if isinstance(a, tuple) and len(a) >= 2:
            host = str(a[0])
            return ("[%s]:%s" if ":" in host else "%s:%s") % (host, a[1])
        if isinstance(a, (str, bytes)):
            return "unix:" + os.fsdecode(a)
        return str(a)

    def argv(args):
        if isinstance(args, (str, bytes)):
            return os.fsdecode(args)
        try:
            return " ".join(os.fsdecode(x) for x in args)
        except Exception:
            return str(args)

    def hook(event, args):
        if busy[0]:
            return
        busy[0] = True
        try:
            if event == "open":
                p, mode, flags = args
                target = where(p)
                if target is None:
                    return
                write = (mode is not None and any(c in mode for c in "wax+")) or (
                    mode is None and flags & write_flags)
                if write:
                    emit("file.write", target, "opened %s" % (mode or hex(flags)))
                else:
                    emit("file.read", target)
            elif event == "os.rename":
                emit("file.write", where(args[1], args[3]), "renamed from %s" % where(args[0], args[2]))
            elif event in ("os.remove", "os.rmdir"):
                emit("file.write", where(args[0], args[1]),
                     "deleted" if event == "os.remove" else "removed directory")
            elif event == "os.mkdir":
                emit("file.write", where(args[0], args[2]), "created directory")
            elif event == "os.truncate":
                if not isinstance(args[0], int):
                    emit("file.write", where(args[0]), "truncated")
            elif event == "os.symlink":
                emit("file.write", where(args[1], args[2]), "symlink to %s" % os.fsdecode(args[0]))
            elif event == "subprocess.Popen":
                emit("proc.spawn", args[0] if args[0] else argv(args[1]).split(" ")[0], argv(args[1]))
            elif event in ("os.exec", "os.posix_spawn"):
                emit("proc.spawn", os.fsdecode(args[0]), argv(args[1]))
            elif event == "os.system":
                emit("proc.spawn", "/bin/sh", "sh -c " + argv(args[0]))
            elif event == "socket.connect":
                emit("net.connect", address(args[1]), "attempt")
            elif event == "socket.getaddrinfo":
                emit("net.dns", str(args[0]), "port %s" % (args[1],))
        except Exception:
            pass
        finally:
            busy[0] = False

    sys.addaudithook(hook)


def _senclaw_chain():
    # Load the sitecustomize this one shadows (Debian ships one).
    import os
    import sys
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


try:
    _senclaw_trace()
except Exception:
    pass
try:
    _senclaw_chain()
except Exception:
    pass
