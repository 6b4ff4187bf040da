package escapetest

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
)

// IPCObjects are System V IPC objects (a shared memory segment holding
// Secret, a message queue holding Secret, a semaphore set of one at 7)
// and a POSIX message queue holding Secret, each mode 0600, as a host
// process made them: what a sandbox must neither find, read nor change.
type IPCObjects struct {
	Key    int    `json:"key"`
	Shm    int    `json:"shm"`
	Msg    int    `json:"msg"`
	Sem    int    `json:"sem"`
	MQ     string `json:"mq"`
	Secret string `json:"secret"`
}

// ipcPrelude is the libc calls the IPC programs use.
const ipcPrelude = `import ctypes, errno, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
libc.mq_open.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_uint, ctypes.c_void_p]
class msgbuf(ctypes.Structure):
    _fields_ = [("mtype", ctypes.c_long), ("mtext", ctypes.c_char * 64)]
class sembuf(ctypes.Structure):
    _fields_ = [("num", ctypes.c_ushort), ("op", ctypes.c_short), ("flg", ctypes.c_short)]
IPC_CREAT, IPC_EXCL, IPC_NOWAIT, IPC_RMID, IPC_STAT, GETVAL, SETVAL = 0o1000, 0o2000, 0o4000, 0, 2, 12, 16
FAILED = ctypes.c_void_p(-1).value
def check(r):
    if r == -1 or r == FAILED:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return r
`

// makeIPC makes the objects of IPCObjects, with key key and the
// POSIX queue name argv[3], and prints them as JSON.
const makeIPC = ipcPrelude + `
key, secret, mq = int(sys.argv[1]), sys.argv[2].encode(), sys.argv[3].encode()
shm = check(libc.shmget(key, 4096, IPC_CREAT | IPC_EXCL | 0o600))
p = check(libc.shmat(shm, None, 0))
ctypes.memmove(p, secret, len(secret))
libc.shmdt(ctypes.c_void_p(p))
msg = check(libc.msgget(key, IPC_CREAT | IPC_EXCL | 0o600))
m = msgbuf(1, secret)
check(libc.msgsnd(msg, ctypes.byref(m), len(secret), 0))
sem = check(libc.semget(key, 1, IPC_CREAT | IPC_EXCL | 0o600))
check(libc.semctl(sem, 0, SETVAL, 7))
q = check(libc.mq_open(mq, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600, None))
check(libc.mq_send(q, secret, len(secret), 0))
print(json.dumps({"key": key, "shm": shm, "msg": msg, "sem": sem, "mq": mq.decode(), "secret": secret.decode()}))
`

// removeIPC removes the objects of the IPCObjects JSON in argv[1] (root
// may remove anyone's).
const removeIPC = ipcPrelude + `
o = json.loads(sys.argv[1])
if o.get("shm", -1) >= 0: libc.shmctl(o["shm"], IPC_RMID, None)
if o.get("msg", -1) >= 0: libc.msgctl(o["msg"], IPC_RMID, None)
if o.get("sem", -1) >= 0: libc.semctl(o["sem"], 0, IPC_RMID)
if o.get("mq"): libc.mq_unlink(o["mq"].encode())
`

// IPCAttempts is a program for inside a sandbox: given the IPCObjects
// JSON of a host process's objects in argv[1], it tries to find, read and
// change each (shmget, shmat and a read, shmat for writing, shmctl,
// msgget, msgrcv, msgctl, semget, semctl, semop, mq_open), by key and by
// id (the ids are listed in /proc/sysvipc), and to make objects of its
// own, keyed argv[2] and named argv[3]. It prints "name ok VALUE" or
// "name refused ERRNO" per attempt, and "made JSON" of what it made.
const IPCAttempts = ipcPrelude + `
o, mykey, myq = json.loads(sys.argv[1]), int(sys.argv[2]), sys.argv[3].encode()
def attempt(what, fn):
    try:
        r = fn(); print(what, "ok", r)
    except OSError as e:
        print(what, "refused", errno.errorcode.get(e.errno, e.errno))
    sys.stdout.flush()
def read_shm():
    p = check(libc.shmat(o["shm"], None, 0o10000))
    v = ctypes.string_at(p, len(o["secret"])).decode(errors="replace")
    libc.shmdt(ctypes.c_void_p(p)); return v
def write_shm():
    p = check(libc.shmat(o["shm"], None, 0))
    ctypes.memmove(p, b"overwritten", 11); libc.shmdt(ctypes.c_void_p(p)); return "written"
def stat(fn, id):
    buf = ctypes.create_string_buffer(512); check(fn(id, IPC_STAT, buf)); return "stat"
def recv():
    m = msgbuf(); n = check(libc.msgrcv(o["msg"], ctypes.byref(m), 64, 0, IPC_NOWAIT)); return m.mtext[:n].decode()
def semop():
    b = sembuf(0, -1, IPC_NOWAIT); return check(libc.semop(o["sem"], ctypes.byref(b), 1))
attempt("shmget_key", lambda: check(libc.shmget(o["key"], 0, 0)))
attempt("shmat_read", read_shm)
attempt("shmat_write", write_shm)
attempt("shmctl_stat", lambda: stat(libc.shmctl, o["shm"]))
attempt("msgget_key", lambda: check(libc.msgget(o["key"], 0)))
attempt("msgrcv", recv)
attempt("msgctl_stat", lambda: stat(libc.msgctl, o["msg"]))
attempt("semget_key", lambda: check(libc.semget(o["key"], 1, 0)))
attempt("semctl_getval", lambda: check(libc.semctl(o["sem"], 0, GETVAL)))
attempt("semop", semop)
attempt("mq_open", lambda: check(libc.mq_open(o["mq"].encode(), os.O_RDWR, 0, None)))
made = {"shm": -1, "msg": -1, "sem": -1, "mq": ""}
def make(kind, fn):
    made[kind] = check(fn()); return made[kind]
attempt("make_shm", lambda: make("shm", lambda: libc.shmget(mykey, 4096, IPC_CREAT | 0o600)))
attempt("make_msg", lambda: make("msg", lambda: libc.msgget(mykey, IPC_CREAT | 0o600)))
attempt("make_sem", lambda: make("sem", lambda: libc.semget(mykey, 1, IPC_CREAT | 0o600)))
def make_private():
    i = check(libc.shmget(0, 4096, IPC_CREAT | 0o600)); libc.shmctl(i, IPC_RMID, None); return i
attempt("make_private_shm", make_private)
def make_mq():
    check(libc.mq_open(myq, os.O_CREAT | os.O_RDWR, 0o600, None)); made["mq"] = myq.decode(); return "made"
attempt("make_mq", make_mq)
print("made", json.dumps(made))
`

var ipcSeq atomic.Int32

// IPCKey is a System V key and a POSIX queue name that no other test of
// this process uses.
func IPCKey() (int, string) {
	n := int(ipcSeq.Add(1))
	key := 0x5e000000 | (os.Getpid()&0xffff)<<8 | n&0xff
	return key, fmt.Sprintf("/senclaw-test-%d-%d", os.Getpid(), n)
}

// MakeIPC makes IPCObjects by running cmd (a Python interpreter, perhaps
// as another user) on the maker program; the test's cleanup removes them
// (the test runs as root).
func MakeIPC(t *testing.T, cmd *exec.Cmd, secret string) IPCObjects {
	t.Helper()
	key, mq := IPCKey()
	cmd.Args = append(cmd.Args, "-c", makeIPC, fmt.Sprint(key), secret, mq)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("making IPC objects: %v\n%s", err, out)
	}
	var o IPCObjects
	if err := json.Unmarshal(out, &o); err != nil {
		t.Fatalf("making IPC objects: %v: %s", err, out)
	}
	t.Cleanup(func() { RemoveIPC(t, string(out)) })
	return o
}

// RemoveIPC removes the objects of the IPCObjects JSON objects.
func RemoveIPC(t *testing.T, objects string) {
	if out, err := exec.Command(Python, "-c", removeIPC, objects).CombinedOutput(); err != nil {
		t.Errorf("removing IPC objects %s: %v\n%s", objects, err, out)
	}
}

// JSON is o as IPCAttempts reads it.
func (o IPCObjects) JSON() string {
	b, _ := json.Marshal(o)
	return string(b)
}

// IPCResults reads the output of IPCAttempts: each attempt's result, and
// the JSON of what the program made.
func IPCResults(stdout string) (got map[string]string, made string) {
	got = map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		k, v, _ := strings.Cut(line, " ")
		if k == "made" {
			made = v
			continue
		}
		got[k] = v
	}
	return got, made
}

// CheckIPCUntouched checks, as root on the host, that a sandbox changed
// none of o: the segment still holds the secret, the message is still in
// its queue, the semaphore still at 7.
func CheckIPCUntouched(t *testing.T, o IPCObjects) {
	t.Helper()
	prog := ipcPrelude + `
o = json.loads(sys.argv[1])
p = check(libc.shmat(o["shm"], None, 0o10000))
print("shm", ctypes.string_at(p, len(o["secret"])).decode(errors="replace"))
print("sem", check(libc.semctl(o["sem"], 0, GETVAL)))
for line in open("/proc/sysvipc/msg").read().splitlines()[1:]:
    f = line.split()
    if int(f[1]) == o["msg"]: print("messages", f[4])
`
	out, err := exec.Command(Python, "-c", prog, o.JSON()).CombinedOutput()
	if err != nil {
		t.Fatalf("looking at the IPC objects: %v\n%s", err, out)
	}
	if want := "shm " + o.Secret + "\nsem 7\nmessages 1\n"; string(out) != want {
		t.Errorf("a sandbox changed the host's IPC objects:\n%s\nwant\n%s", out, want)
	}
}
