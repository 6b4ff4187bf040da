# Generates app/api/openapi.json (OpenAPI 3.1): python3 scripts/gen-openapi.py
# (or into the file named by its argument, as a test does to see that the
# committed document is the generated one).
# The route tables below are the served routes (a test keeps them in step
# with app/api); each schema lists every field the server sends and
# requires those it always sends (a test compares the schemas with the Go
# types, and real answers of a real server with the schemas).
import json, os
routes = [
("GET","/status","Engine status: isolation state, version, uptime, sandbox counts; runs: how many execute, wait in the queue and go on in the background.",None,"Status"),
("GET","/health","Liveness: {ok: true}; 503 {ok: false, error} when the engine could not start (\"store damaged: ...\": run senclaw doctor), which this route and /daemon/stop still answer.",None,None),
("GET","/caps","Capabilities: each backend's probe state, version, reason and what it enforces; ?refresh=1 probes again.",None,"Capabilities"),
("GET","/languages","Code languages for runs.",None,None),
("GET","/fs-modes","The fs modes with labels and descriptions.",None,None),
("GET","/sandboxes","List sandboxes, most recently used first: one page (?limit, ?offset) of those matching ?q (name, id, backend, image, state), with the total that match and how many run; without ?limit, all of them.",None,"SandboxPage"),
("POST","/sandboxes","Create a sandbox. Invalid fields are refused with the field named; nothing is stored.","SandboxConfig","SandboxReply"),
("GET","/sandboxes/{id}","One sandbox with its live state.",None,"Sandbox"),
("PATCH","/sandboxes/{id}","Change a sandbox; the same checks as on create.","SandboxConfig","SandboxReply"),
("DELETE","/sandboxes/{id}","Delete a sandbox; ?purge=true also removes its own workspace (never a project dir).",None,None),
("POST","/sandboxes/{id}/start","Start what the sandbox keeps (a container); nothing to start for bwrap.",None,None),
("POST","/sandboxes/{id}/stop","Kill every process of the sandbox (and stop its container).",None,None),
("POST","/sandboxes/{id}/recreate","Recreate the sandbox's container from its saved settings; files are kept.",None,None),
("POST","/sandboxes/{id}/exec","Run a command (command: shell line, or argv). ?stream=1 streams NDJSON output; with Connection: Upgrade and Upgrade: senclaw-attach/1 the run is attached (101, as for /agent-shell): senclaw shell, with a terminal and interactive (no deadline unless timeoutMs).","ExecBody","RunReply"),
("POST","/sandboxes/{id}/run","Run code (language python|node|bash, code). ?stream=1 streams NDJSON output.","RunBody","RunReply"),
("POST","/sandboxes/{id}/install","Install packages with pip or npm into the workspace; needs network permission.","InstallBody","RunReply"),
("GET","/sandboxes/{id}/files","List a folder (?path=) of the sandbox.",None,None),
("GET","/sandboxes/{id}/file","Read a file (?path=, ?encoding=base64, ?limit=bytes up to 2 MiB).",None,"FileContent"),
("PUT","/sandboxes/{id}/file","Write a file, creating parent folders; refused inside read-only mounts.","FileBody",None),
("DELETE","/sandboxes/{id}/file","Delete a file or folder (?path=).",None,None),
("POST","/sandboxes/{id}/mkdir","Create a folder and its parents.","PathBody",None),
("GET","/sandboxes/{id}/stats","Processes with CPU and memory, and the recent history.",None,"Stats"),
("POST","/sandboxes/{id}/kill","Kill one process of the sandbox ({pid}) or all ({}).","KillBody",None),
("GET","/sandboxes/{id}/mounts","The sandbox's mounts.",None,None),
("POST","/sandboxes/{id}/mounts","Mount a host folder ({source, target, readOnly}).","Mount",None),
("POST","/sandboxes/{id}/mounts/remove","Remove a mount ({target}); the host folder is untouched.","TargetBody",None),
("POST","/sandboxes/{id}/fs-mode","Set what the sandbox may read ({fsMode}).","FsModeBody",None),
("POST","/sandboxes/{id}/ports","Replace the port rules ({listen, connect, loopback}); the note says what is enforced.","PortsBody",None),
("POST","/sandboxes/{id}/trace","Turn activity tracing on or off ({enabled}).","TraceBody",None),
("GET","/sandboxes/{id}/events","Traced events, newest first (?runId, ?kind prefix, ?limit 1-5000).",None,None),
("DELETE","/sandboxes/{id}/events","Delete the sandbox's traced events.",None,None),
("GET","/settings","The settings (defaults for new sandboxes, allowlist, sandbox user, ...).",None,"Settings"),
("PUT","/settings","Merge and save settings; validated like sandboxes.","Settings","Settings"),
("GET","/exec-policy","The enforcement switches.",None,"ExecPolicy"),
("PUT","/exec-policy","Merge and save the enforcement switches.","ExecPolicy","ExecPolicy"),
("GET","/runs","Recent runs, newest first: one page (?limit 1-5000, default 50, ?offset) of those of ?sandboxId matching ?q (command, language, sandbox, source, isolation) and ?source (scheduler, agent-shell, mcp, ...), only the refused ones with ?refused=true, with the total that match; ?state=running lists the background runs going on now.",None,"RunPage"),
("GET","/runs/{id}","One run record.",None,"RunRecord"),
("GET","/runs/{id}/log","A background run's log (?offset bytes, negative from the end; ?limit bytes, default 131072, at most 1048576); ?follow=1 streams NDJSON lines {data} as it grows and {end: RunRecord} when the run is over.",None,"RunLog"),
("POST","/runs/{id}/kill","Kill one run (a background run, say); killed is false when it had ended.",None,None),
("POST","/run-once","Run in a throwaway sandbox (its config fields may be given too); removed afterwards, its record kept.","RunBody","RunReply"),
("POST","/agent-shell","Run an agent's shell command under the exec policy ({projectDir, command or argv, dir, timeoutMs, env, hostEnv, agent}). ?stream=1 streams NDJSON output; with Connection: Upgrade and Upgrade: senclaw-attach/1 the run is attached (101, see below).","AgentShellBody","RunReply"),
("POST","/agent-shell/check","What the agent shell would do in a project now, running nothing: {execShell, isolation} (none with the switch off), or the refusal (403) or bad project dir (400). Agent hooks ask it first.","ProjectBody",None),
("GET","/integrations","Where the agent integrations are installed: each agent's user settings, the agent sandboxes' project settings and the SHELL wrapper (read for the owner, never written).",None,None),
("POST","/stop-all","Stop every sandbox.",None,None),
("GET","/autostart","Start at login: whether the owner's XDG autostart entry (~/.config/autostart/senclaw.desktop) is there, as it is on disk.",None,"Autostart"),
("PUT","/autostart","Write ({enabled: true}) or remove ({enabled: false}) the autostart entry; an entry senclaw did not write is left alone (409).","AutostartBody","Autostart"),
("POST","/login-codes","A one-time code for a browser login (GET /login?code=...).",None,None),
("POST","/daemon/stop","Stop the daemon gracefully.",None,None),
("GET","/doctor","senclaw doctor: the store (bbolt's check), the data dir's permissions and free space, the sandbox user's access to the workspaces, each backend's health, and what runs left (processes, cgroups, containers, one-shot workspaces), each check with what to do. Answers also when the engine could not start.",None,"DoctorReport"),
("POST","/doctor/repair","senclaw doctor --repair: copy what can be read of a damaged store into a new one (the damaged file is kept; restart: true, and the daemon stops after answering so that the next start opens it), or remove the leftovers no sandbox or run owns; says what it did.",None,"DoctorReport"),
("GET","/schedules","Scheduled scripts, by name, each with its next fire time and last result (without its code).",None,"ScheduleList"),
("POST","/schedules","Create a schedule. An invalid cron expression is refused with the field named and, when a correction can be guessed, the correction and its next five fire times; note says what the exec policy will do to its runs.","ScheduleSpec","ScheduleReply"),
("GET","/schedules/{id}","One schedule with its code.",None,"Schedule"),
("PATCH","/schedules/{id}","Change a schedule; the same checks as on create. Times before the change are not counted as missed.","ScheduleSpec","ScheduleReply"),
("DELETE","/schedules/{id}","Delete a schedule; a run of it still going goes on and is recorded.",None,None),
("POST","/schedules/{id}/pause","Stop the schedule firing on its own (run now still works).",None,"Schedule"),
("POST","/schedules/{id}/resume","Let it fire again, from now on (the paused times are not missed).",None,"Schedule"),
("POST","/schedules/{id}/run","Fire it now, through the runner under the Scheduler scripts switch. ?wait=1 answers with the run when it ends (403 with the record when refused); without, 202 at once. 409 while its previous run is still going.",None,"RunReply"),
("GET","/schedules/{id}/history","The schedule's firings, newest first (?limit 1-100, default 50): ok, failed, refused, skipped (overlap), missed (engine down), running.",None,"ScheduleHistory"),
]

# operationId of every route, by method and path.
operation_ids = {
 ("GET","/status"):"getStatus", ("GET","/health"):"getHealth", ("GET","/caps"):"getCapabilities",
 ("GET","/languages"):"listLanguages", ("GET","/fs-modes"):"listFsModes",
 ("GET","/sandboxes"):"listSandboxes", ("POST","/sandboxes"):"createSandbox", ("GET","/sandboxes/{id}"):"getSandbox",
 ("PATCH","/sandboxes/{id}"):"updateSandbox", ("DELETE","/sandboxes/{id}"):"deleteSandbox",
 ("POST","/sandboxes/{id}/start"):"startSandbox", ("POST","/sandboxes/{id}/stop"):"stopSandbox", ("POST","/sandboxes/{id}/recreate"):"recreateSandbox",
 ("POST","/sandboxes/{id}/exec"):"execCommand", ("POST","/sandboxes/{id}/run"):"runCode", ("POST","/sandboxes/{id}/install"):"installPackages",
 ("GET","/sandboxes/{id}/files"):"listFiles", ("GET","/sandboxes/{id}/file"):"readFile", ("PUT","/sandboxes/{id}/file"):"writeFile",
 ("DELETE","/sandboxes/{id}/file"):"deleteFile", ("POST","/sandboxes/{id}/mkdir"):"makeDirectory",
 ("GET","/sandboxes/{id}/stats"):"getSandboxStats", ("POST","/sandboxes/{id}/kill"):"killSandboxProcesses",
 ("GET","/sandboxes/{id}/mounts"):"listMounts", ("POST","/sandboxes/{id}/mounts"):"addMount", ("POST","/sandboxes/{id}/mounts/remove"):"removeMount",
 ("POST","/sandboxes/{id}/fs-mode"):"setFsMode", ("POST","/sandboxes/{id}/ports"):"setPortRules", ("POST","/sandboxes/{id}/trace"):"setTracing",
 ("GET","/sandboxes/{id}/events"):"listTraceEvents", ("DELETE","/sandboxes/{id}/events"):"clearTraceEvents",
 ("GET","/settings"):"getSettings", ("PUT","/settings"):"updateSettings",
 ("GET","/exec-policy"):"getExecPolicy", ("PUT","/exec-policy"):"updateExecPolicy",
 ("GET","/runs"):"listRuns", ("GET","/runs/{id}"):"getRun", ("GET","/runs/{id}/log"):"getRunLog", ("POST","/runs/{id}/kill"):"killRun",
 ("POST","/run-once"):"runOnce", ("POST","/agent-shell"):"runAgentShell", ("POST","/agent-shell/check"):"checkAgentShell",
 ("GET","/integrations"):"listIntegrations", ("POST","/stop-all"):"stopAllSandboxes",
 ("GET","/autostart"):"getAutostart", ("PUT","/autostart"):"setAutostart",
 ("POST","/login-codes"):"createLoginCode", ("POST","/daemon/stop"):"stopDaemon",
 ("GET","/schedules"):"listSchedules", ("POST","/schedules"):"createSchedule", ("GET","/schedules/{id}"):"getSchedule",
 ("PATCH","/schedules/{id}"):"updateSchedule", ("DELETE","/schedules/{id}"):"deleteSchedule",
 ("POST","/schedules/{id}/pause"):"pauseSchedule", ("POST","/schedules/{id}/resume"):"resumeSchedule",
 ("POST","/schedules/{id}/run"):"runSchedule", ("GET","/schedules/{id}/history"):"getScheduleHistory",
 ("GET","/doctor"):"runDoctor", ("POST","/doctor/repair"):"repairEngine",
}
# The answer of the routes whose table row names none.
reply_schema = {
 ("GET","/health"):"Health", ("GET","/languages"):"Languages", ("GET","/fs-modes"):"FsModes",
 ("DELETE","/sandboxes/{id}"):"DeleteReply", ("POST","/sandboxes/{id}/start"):"OkNote", ("POST","/sandboxes/{id}/stop"):"StopReply",
 ("POST","/sandboxes/{id}/recreate"):"OkNote", ("GET","/sandboxes/{id}/files"):"FileList", ("PUT","/sandboxes/{id}/file"):"FileWritten",
 ("DELETE","/sandboxes/{id}/file"):"FileDeleted", ("POST","/sandboxes/{id}/mkdir"):"DirMade", ("POST","/sandboxes/{id}/kill"):"KillReply",
 ("GET","/sandboxes/{id}/mounts"):"MountList", ("POST","/sandboxes/{id}/mounts"):"MountResult", ("POST","/sandboxes/{id}/mounts/remove"):"UnmountReply",
 ("POST","/sandboxes/{id}/fs-mode"):"FsModeReply", ("POST","/sandboxes/{id}/ports"):"PortsResult", ("POST","/sandboxes/{id}/trace"):"TraceReply",
 ("GET","/sandboxes/{id}/events"):"EventsResult", ("DELETE","/sandboxes/{id}/events"):"EventsCleared",
 ("POST","/runs/{id}/kill"):"KillRunReply", ("POST","/agent-shell/check"):"AgentShellCheck", ("GET","/integrations"):"IntegrationList",
 ("POST","/stop-all"):"StopReply", ("POST","/login-codes"):"LoginCode", ("POST","/daemon/stop"):"DaemonStopReply",
 ("DELETE","/schedules/{id}"):"ScheduleDeleted",
}

def A(name): return {"$ref":"#/components/schemas/"+name}
def arr(x, **kw): return {"type":"array","items":x, **kw}
def D(desc, schema=None):
    """schema (a string by default) with a description."""
    return {**(schema or {"type":"string"}), "description":desc}
S, I, B, N = {"type":"string"}, {"type":"integer"}, {"type":"boolean"}, {"type":"number"}
T = {"type":"string","format":"date-time"}
def o(props, req=None, extra=None):
    """An object of props; req lists the fields always sent (or needed)."""
    d = {"type":"object","properties":props}
    if req: d["required"]=list(req)
    if extra: d.update(extra)
    return d
def always(props, *optional, extra=None):
    """An object whose every field is always sent but those named optional."""
    return o(props, [k for k in props if k not in optional], extra)
strmap = {"type":"object","additionalProperties":{"type":"string"}}
strs = arr(S)
port = {"type":"integer","minimum":1,"maximum":65535}
ports_in = lambda lo=1: arr({"type":"integer","minimum":lo,"maximum":65535}, maxItems=16)
fsmode = {"type":"string","enum":["strict","allowlist","open"]}
notes = {
 "note":D("one line a person reads first: what the sandbox or the run got; for a run, the rules it asked for and did not get (empty when everything held)"),
 "details":D("the rest, one fact an item: what each layer enforces and how, when a change takes effect, the limits that held", strs),
 "warnings":D("the rules that were asked for and are not enforced, and only those (empty when everything holds)", strs),
}

schemas = {
 "Error":always({"error":D("what was refused, why, and what to do"),"field":D("the bad input's field, or the setting of a bound (429)"),
   "refused":D("a run refused by policy or missing isolation", B),"run":A("RunRecord")},"field","refused","run"),
 "Health":always({"ok":B,"error":D("when ok is false (503): why the engine could not start, e.g. store damaged: ...; senclaw doctor says what to do")},"error"),
 "Status":always({"version":S,"state":{"type":"string","enum":["isolated","degraded"]},"summary":S,"uptimeSec":I,
   "sandboxes":D("sandboxes the engine holds", I),"running":D("of them, those with a run going", I),"dataDir":S,"pid":I,
   "runs":always({"running":D("foreground runs executing (at most concurrency)", I),"waiting":D("runs waiting in the queue (at most queueLength)", I),
     "background":D("background runs and Space App servers going (at most maxBackgroundRuns)", I)})}),
 "Capability":always({"backend":S,"state":{"type":"string","enum":["never seen","seen and gone","healthy"]},"version":S,
   "reason":D("why the state is what it is, and what to do when it is not healthy"),"isolates":D("false for a backend that runs code with no barrier", B),
   "enforces":D("the rules it can enforce: fs, network, ports, memory, pids, cpu, disk, seccomp, ...", strs),
   "details":D("backend-specific facts (Landlock ABI, seccomp, cgroup version, daemon address)", strmap),"checkedAt":T},"version","details"),
 "Capabilities":always({"os":S,"state":{"type":"string","enum":["isolated","degraded"],"description":"isolated when at least one isolating backend is healthy"},
   "summary":S,"recommended":D("the backend a run without a choice gets"),"backends":arr(A("Capability")),
   "facilities":D("probes of what is not a backend (Landlock)", arr(A("Capability")))},"facilities"),
 "Languages":always({"languages":arr({"type":"string","enum":["python","node","bash"]})}),
 "FsModeInfo":always({"mode":fsmode,"label":S,"description":S}),
 "FsModes":always({"fsModes":arr(A("FsModeInfo"))}),
 "Mount":always({"source":D("an absolute host folder"),"target":D("where it appears, relative to the workspace (default: the folder's name)"),"readOnly":B}),
 "PortRules":always({"listen":D("ports (>= 1024) the sandbox may bind, reachable from this machine at 127.0.0.1 only", arr(port)),
   "connect":D("remote ports it may dial", arr(port)),"loopback":D("this machine's own service ports it may call; empty: none", arr(port)),
   "domains":D("when not empty, the only names it may reach (exact, or *.example.com)", strs),"denyDomains":D("names it may never reach; deny wins over allow", strs)}),
 "Sandbox":always({"id":S,"name":S,"kind":{"type":"string","enum":["agent","oneshot","app"],"description":"absent for a managed sandbox; agent: the agent shell's per-project sandbox; app: a Space App's"},
   "backend":D("bwrap, landlock, docker, seatbelt, windows or direct; empty: the best available at each run"),"image":D("the container image (container backends)"),
   "workspace":D("the host folder it may write"),"ownWorkspace":D("the workspace is the engine's own (the only kind a purge removes)", B),
   "fsMode":fsmode,"mounts":arr(A("Mount")),"network":D("the network switch: outbound through the engine's proxy", B),"ports":A("PortRules"),
   "cpus":N,"memoryMb":I,"pids":I,"diskMb":D("quota of its own workspace in MB", I),"timeoutMs":D("default timeout of its runs", I),"env":strmap,
   "traceEnabled":B,"traceAll":D("traces keep every read instead of folding the system roots", B),
   "apiAccess":D("a Space App's sandbox that may reach the engine's API with the app's own token", B),
   "state":{"type":"string","enum":["idle","running","error"]},"container":D("what a container backend keeps: running, stopped, none or needs recreate"),
   "lastError":S,"createdAt":T,"updatedAt":T,"lastUsedAt":D("when its last run started; absent until it has run", T)},
   "kind","image","traceAll","apiAccess","container","lastError","lastUsedAt"),
 "SandboxPage":always({"sandboxes":arr(A("Sandbox")),"total":D("sandboxes that match ?q, on every page", I),"running":D("sandboxes with a run going, of all", I)}),
 "SandboxReply":always({"sandbox":A("Sandbox"),**notes}),
 "RunPage":always({"runs":arr(A("RunRecord")),"total":D("runs that match, on every page", I)}),
 "DeleteReply":always({"ok":B,"deleted":D("the id"),"files":D("purged, or still on disk")}),
 "OkNote":always({"ok":B,"note":S}),
 "StopReply":always({"ok":B,"stopped":D("processes (or sandboxes, for stop-all) stopped", I)}),
 "RunRecord":always({"id":S,"sandboxId":S,"sandboxName":S,
   "source":{"type":"string","enum":["mcp","rest","cli","agent-shell","scheduler","code","space-app"]},
   "kind":{"type":"string","enum":["exec","code","install","oneshot"]},"command":D("the command as given (at most 2000 characters)"),"language":S,"backend":S,
   "isolation":D("what was really applied, measured at start: bwrap, landlock, docker, none, none (degraded), refused: <reason>"),
   "enforced":D("the limits that held, in words", strs),"missing":D("what was asked for and not enforced, in words", strs),
   "network":D("the run could reach other hosts (the network on, or connect ports); listen and loopback ports alone leave it false", B),
   "background":B,"ttlMs":D("a background run's deadline (absent: none)", I),"idleTtlMs":D("a background run's idle TTL (absent: none)", I),
   "terminal":D("the run had a pseudo-terminal", B),"interactive":D("a person was attached to it (senclaw shell): no deadline unless one was given", B),"agent":D("whose shell asked for an agent-shell run (claude-code, gemini-cli, shell)"),
   "state":{"type":"string","enum":["running","done"]},"exitCode":D("null when the process was killed or has not ended", {"type":["integer","null"]}),
   "timedOut":B,"truncated":D("the output was longer than kept; its start and end are kept", B),"killed":D("why the engine killed the run"),
   "durationMs":I,"stdout":D("the output's tail"),"stderr":S,"logFile":D("a background run's log on the host"),"error":D("why the run failed to start"),
   "startedAt":T,"scheduleId":D("the schedule that fired it (source scheduler)"),
   "aheadId":D("when a one-shot ran in a sandbox the engine made ahead: the id it was made under, which its cgroups carry")},
   "command","language","enforced","missing","background","ttlMs","idleTtlMs","terminal","interactive","agent","killed","logFile","error","scheduleId","aheadId"),
 "RunReply":always({"run":A("RunRecord"),"ok":D("exited 0, not timed out nor killed; a background run that started", B),
   "stdout":D("empty when streamed"),"stderr":S,**notes,"lifetime":D("a background run: how it ends")},"lifetime"),
 "RunStarted":always({"started":B,"schedule":A("Schedule")}),
 "FileEntry":always({"name":S,"path":D("relative to the workspace"),"dir":B,"size":I,"modifiedMs":I,"link":D("a symbolic link's target"),"readOnly":D("inside a read-only mount", B)},"link","readOnly"),
 "FileList":always({"entries":arr(A("FileEntry"))}),
 "FileContent":always({"path":S,"size":D("the file's size in bytes", I),"encoding":{"type":"string","enum":["utf-8","base64"]},"content":S}),
 "FileWritten":always({"ok":B,"path":S,"bytes":I}),
 "FileDeleted":always({"ok":B,"deleted":D("the path")}),
 "DirMade":always({"ok":B,"path":S}),
 "ProcessInfo":always({"pid":I,"ppid":I,"pgid":I,"command":S,"cpuPercent":D("percent of one core", N),"rssMb":N,"rssBytes":I,"elapsedSec":N}),
 "StatsPoint":always({"atMs":I,"cpuPercent":N,"rssMb":N}),
 "Stats":always({"sandboxId":S,"source":{"type":"string","enum":["host","container"]},"running":B,"processes":arr(A("ProcessInfo")),
   "cpuPercent":N,"rssMb":N,"memoryLimitMb":I,"sampledAtMs":I,"history":arr(A("StatsPoint")),
   "denied":D("connections the egress proxy refused since the engine started", I),"recentDenied":D("the last distinct refused hosts (up to 12, newest last)", strs),
   "note":D("sampling failed, or something is missing")},"note"),
 "KillReply":always({"ok":B,"groups":D("process groups killed ({} asked for all)", I),"killed":D("the pid killed", I)},"groups","killed"),
 "MountList":always({"mounts":arr(A("Mount"))}),
 "MountResult":always({"mount":A("Mount"),"at":D("where the folder appears inside the sandbox"),**notes}),
 "UnmountReply":always({"ok":B,"unmounted":S,"realFolder":D("untouched"),"sandbox":A("Sandbox")}),
 "FsModeReply":always({"ok":B,"sandbox":A("Sandbox"),"fsMode":fsmode,"label":S,**notes}),
 "PortsResult":always({"sandbox":A("Sandbox"),"ports":A("PortRules"),"reachableAt":D("127.0.0.1:PORT for each listen port", strs),**notes}),
 "TraceReply":always({"ok":B,"sandbox":D("the id"),"tracing":{"type":"string","enum":["ON","OFF"]},"note":S}),
 "StoredEvent":always({"runId":S,"tsMs":I,"pid":I,"kind":D("file.read, file.write, proc.spawn, net.connect, net.dns, denied or trace.truncated"),
   "target":S,"detail":S,"source":D("who observed it: strace, in-sandbox (can be tampered with), diff or proxy")},"detail"),
 "EventsResult":always({"traceEnabled":B,"events":arr(A("StoredEvent")),"note":D("why the answer is empty, and what to do")},"note"),
 "EventsCleared":always({"ok":B,"deleted":D("events deleted", I)}),
 "Settings":always({
   "defaultFsMode":fsmode,"allowlist":D("folders the allowlist mode may read", strs),"defaultNetwork":B,
   "defaultCpus":{"type":"number","minimum":0.1,"maximum":32},"defaultMemoryMb":{"type":"integer","minimum":64,"maximum":65536},
   "defaultPids":{"type":"integer","minimum":16,"maximum":8192},"defaultTimeoutMs":{"type":"integer","minimum":1000,"maximum":600000},
   "defaultDiskMb":D("the workspace quota of new sandboxes in MB", {"type":"integer","minimum":16,"maximum":1048576}),
   "allowedSockets":D("host Unix sockets every sandbox may connect to by that path; only a person may change them", strs),
   "sandboxUid":D("the host user sandboxed code runs as when the engine runs as root", {"type":"integer","minimum":1}),"sandboxGid":{"type":"integer","minimum":1},
   "allowDirect":D("permit runs that ask for the direct backend (no isolation at all); only a person may change it", B),
   "landlockListen":D("permit listen ports in landlock sandboxes (they bind in this machine's network)", B),
   "defaultImage":D("the container image of container backends"),"notifications":D("desktop notifications", B),
   "mcpSessionIdleMinutes":{"type":"integer","minimum":1,"maximum":1440},"mcpMaxSessions":{"type":"integer","minimum":1,"maximum":1000},
   "mountAllow":D("host folders the owner lets sandboxes mount although the mount guard refuses them by default", strs),
   "maxSandboxes":{"type":"integer","minimum":1,"maximum":100000},
   "concurrency":D("foreground runs executing at once in all sandboxes (default 4 per core); more wait in the queue", {"type":"integer","minimum":1,"maximum":10000}),
   "queueLength":D("runs that may wait for a place (0: none wait); more are refused with 429", {"type":"integer","minimum":0,"maximum":100000}),
   "maxBackgroundRuns":D("background runs and Space App servers at once (they never wait in the queue); more are refused with 429", {"type":"integer","minimum":1,"maximum":100000}),
   "maxRunsPerSandbox":D("runs of one sandbox at once, waiting and background ones included", {"type":"integer","minimum":1,"maximum":10000}),
   "minFreeDiskMb":D("new runs are refused while the data dir's filesystem has less free space than this, in MiB (0: never)", {"type":"integer","minimum":0,"maximum":1048576}),
   "dockerPoolSize":D("idle Docker containers kept ready per one-shot configuration (0: none)", {"type":"integer","minimum":0,"maximum":16})}),
 "ExecPolicy":always({"execShell":D("the agent shell runs sandboxed (on) or directly (off)", B),"execNetwork":B,
   "execFsMode":D("what the sandboxed agent shell may read", fsmode),"execLoopback":D("this machine's ports the agent shell may call", arr(port)),
   "runPython":B,"runNode":B,"codeNetwork":B,"schedulerScript":B,"schedulerNetwork":B}),
 "RunLog":always({"runId":S,"offset":D("where data starts in the log", I),"size":D("the log's size now", I),"data":S,"running":D("the run goes on (the log may grow)", B)}),
 "KillRunReply":always({"ok":B,"killed":D("false when it had ended", B),"run":S,"message":S}),
 "AgentShellCheck":always({"execShell":B,"isolation":D("what a run would get now: none with the switch off")}),
 "Integration":always({"agent":{"type":"string","enum":["claude-code","gemini-cli","shell"]},"scope":{"type":"string","enum":["user","project"]},
   "path":S,"project":S,"installed":B,"command":D("the hook's command as installed"),"problem":D("why the state could not be read")},"project","command","problem"),
 "IntegrationList":always({"integrations":arr(A("Integration"))}),
 "LoginCode":always({"code":S,"path":D("open path + code in a browser within two minutes")}),
 "DaemonStopReply":always({"ok":B,"stopping":B}),
 "SandboxConfig":o({
   "name":{"type":"string","minLength":1,"maxLength":100},"backend":D("bwrap, landlock, docker, direct or auto"),"image":S,"fsMode":fsmode,
   "mounts":arr(A("MountBody"), maxItems=32),"network":B,"listenPorts":ports_in(1024),"connectPorts":ports_in(),"loopbackPorts":ports_in(),
   "domains":strs,"denyDomains":strs,
   "cpus":{"type":"number","minimum":0.1,"maximum":32},"memoryMb":{"type":"integer","minimum":64,"maximum":65536},
   "pids":{"type":"integer","minimum":16,"maximum":8192},"diskMb":{"type":"integer","minimum":16,"maximum":1048576},
   "timeoutMs":{"type":"integer","minimum":1000,"maximum":600000},"env":strmap,
   "projectDir":D("on create: a folder of the caller's as the writable workspace (never purged, no quota), checked as a read-write mount")},
   None,{"additionalProperties":False}),
 "RunBody":o({"command":D("a shell line"),"argv":strs,"language":{"type":"string","enum":["python","node","bash"]},"code":S,
   "timeoutMs":D("a foreground run's timeout", {"type":"integer","minimum":1000,"maximum":600000}),"env":strmap,
   "background":D("start it and return (202); it runs until it exits or is stopped, unless ttlMs or idleTtlMs", B),
   "ttlMs":D("a background run's deadline", {"type":"integer","minimum":1000,"maximum":2592000000}),
   "idleTtlMs":D("kill a background run after this long without CPU use or output", {"type":"integer","minimum":1000,"maximum":2592000000}),
   "source":{"type":"string","enum":["mcp","rest","cli","agent-shell","scheduler","code","space-app"],"description":"who asks (default rest)"},
   "trace":D("trace this run even when its sandbox does not", B)},None,{"additionalProperties":False}),
 "InstallBody":o({"manager":{"type":"string","enum":["pip","npm"]},"packages":strs,"timeoutMs":I,"source":S},["manager","packages"],{"additionalProperties":False}),
 "FileBody":o({"path":S,"content":S,"encoding":{"type":"string","enum":["utf-8","base64"]}},["path"],{"additionalProperties":False}),
 "PathBody":o({"path":S},["path"],{"additionalProperties":False}),
 "TargetBody":o({"target":S},["target"],{"additionalProperties":False}),
 "KillBody":o({"pid":D("a process of the sandbox; absent: all", I)},None,{"additionalProperties":False}),
 "FsModeBody":o({"fsMode":fsmode},["fsMode"],{"additionalProperties":False}),
 "PortsBody":o({"listen":ports_in(1024),"connect":ports_in(),"loopback":ports_in(),"domains":D("absent with denyDomains: both kept", strs),"denyDomains":strs},None,{"additionalProperties":False}),
 "TraceBody":o({"enabled":B},["enabled"],{"additionalProperties":False}),
 "AgentShellBody":o({"projectDir":D("the directory the command may write"),"command":S,"argv":strs,"dir":D("where in the project the command starts"),
   "timeoutMs":I,"env":strmap,"hostEnv":D("the caller's environment, used only with the switch off (on the host)", strmap),
   "agent":{"type":"string","pattern":"^[a-z0-9][a-z0-9-]{0,31}$"},
   "terminal":D("attached runs only: a terminal of cols x rows on the standard descriptors fds (1 or 2 among them; in a Docker sandbox all three, as docker exec -it)",
     o({"cols":{"type":"integer","minimum":1,"maximum":10000},"rows":{"type":"integer","minimum":1,"maximum":10000},"fds":arr({"type":"integer","enum":[0,1,2]})}))},
   ["projectDir"],{"additionalProperties":False}),
 "ProjectBody":o({"projectDir":S},["projectDir"],{"additionalProperties":False}),
 "DoctorReport":always({"ok":D("no check failed", B),
   "checks":arr(always({"name":S,"status":{"type":"string","enum":["ok","warn","fail"]},"detail":S,"fix":D("what to do, when not ok")},"fix")),
   "leftovers":arr(always({"kind":{"type":"string","enum":["workspace","files","cgroup","container","process"]},"what":S,"owner":S,"removable":B,"removed":B,"error":S},"owner","removed","error")),
   "repaired":arr(S),"restart":D("the daemon restarts on the repaired store", B)},"repaired","restart"),
 "Autostart":always({"enabled":D("the entry exists and is not Hidden=true", B),"path":S,"exec":D("the program it starts"),
   "foreign":D("the file was not written by senclaw and is left alone", B)},"exec","foreign"),
 "AutostartBody":o({"enabled":B},["enabled"],{"additionalProperties":False}),
 "ScheduleSpec":{"type":"object","additionalProperties":False,"properties":{
   "name":{"type":"string","maxLength":100},
   "cron":{"type":"string","description":"five fields (minute hour day-of-month month day-of-week), or @hourly, @daily, @weekly, @monthly, @yearly, @every DURATION (at least 10s)"},
   "timeZone":{"type":"string","description":"IANA zone name; empty for the engine's local zone"},
   "language":{"type":"string","enum":["bash","python","node"],"description":"bash: code is a script"},
   "code":{"type":"string"},"env":strmap,
   "timeoutMs":{"type":"integer","minimum":1000,"maximum":600000,"description":"default 600000"},
   "network":{"type":"boolean","description":"wanted; with Scheduler scripts on it also needs the policy's schedulerNetwork, else the run is refused"},
   "paused":{"type":"boolean"},"missed":{"type":"string","enum":["skip","once"],"description":"times missed while the engine was down: forgotten (skip, default) or one catch-up run (once)"},
   "jitterSec":{"type":"integer","minimum":0,"maximum":3600,"description":"a fixed delay per schedule below this, to spread schedules sharing a minute"}}},
 "Firing":always({"at":D("when it was due (or run now was asked)", T),"trigger":{"type":"string","enum":["schedule","catch-up","manual"]},
   "outcome":{"type":"string","enum":["ok","failed","refused","skipped","missed","running"]},"runId":S,"startedAt":T,
   "exitCode":{"type":["integer","null"]},"isolation":S,"durationMs":I,"reason":D("why, for anything but ok"),"missed":D("times missed (outcome missed)", I)},
   "runId","startedAt","exitCode","isolation","durationMs","reason","missed"),
 "Schedule":always({"id":S,"name":S,"cron":S,"timeZone":S,"zone":D("the zone it is read in, by name"),
   "description":D("the expression in words"),"language":S,"code":D("absent in lists"),"summary":D("the first line of the code"),
   "env":strmap,"timeoutMs":I,"network":B,"paused":B,"missed":{"type":"string","enum":["skip","once"]},"jitterSec":I,
   "tenant":D("the owning tenant; empty until tenants exist"),"nextRun":D("null when paused", {"type":["string","null"],"format":"date-time"}),
   "running":B,"lastRun":{"oneOf":[A("Firing"),{"type":"null"}]},"createdAt":T,"updatedAt":T},"code"),
 "ScheduleList":always({"schedules":arr(A("Schedule"))}),
 "ScheduleReply":always({"schedule":A("Schedule"),"note":D("what the exec policy will do to its runs")},"note"),
 "ScheduleHistory":always({"history":arr(A("Firing"))}),
 "ScheduleDeleted":always({"ok":B,"deleted":D("the id")}),
}
schemas["MountBody"] = o({"source":D("an absolute host folder"),"target":D("where it appears, relative to the workspace (default: the folder's name)"),"readOnly":B},["source"],{"additionalProperties":False})
# Request bodies other than the table's (a request's Mount may leave out
# what the answer's always has).
schemas["ExecBody"] = json.loads(json.dumps(schemas["RunBody"]))
schemas["ExecBody"]["properties"]["terminal"] = schemas["AgentShellBody"]["properties"]["terminal"]
schemas["ExecBody"]["properties"]["interactive"] = D("attached runs only: a person is at it (senclaw shell); no deadline unless timeoutMs, and the record says interactive", B)
request_schema = {("POST","/sandboxes/{id}/mounts"):"MountBody"}
# The run routes' ?stream=1: NDJSON, one object a line.
stream_line = {"oneOf":[always({"stdout":S}),always({"stderr":S}),always({"result":A("RunReply")}),always({"error":A("Error")})],
  "description":"one line of ?stream=1: {stdout} and {stderr} chunks as the run writes them, then {result: RunReply} (stdout and stderr empty: already streamed) or {error: Error}"}
log_line = {"oneOf":[always({"data":S}),always({"end":A("RunRecord")}),always({"error":A("Error")})],
  "description":"one line of ?follow=1: {data} as the log grows, {end: RunRecord} when the run is over, or {error}"}
schemas["StreamLine"] = stream_line
schemas["LogLine"] = log_line

def param(name, schema, desc=None, required=False):
    p = {"name":name,"in":"query","schema":schema}
    if desc: p["description"]=desc
    if required: p["required"]=True
    return p
page_params=[param("limit",{"type":"integer","minimum":1,"maximum":100000},"items per page"),param("offset",{"type":"integer","minimum":0,"maximum":100000}),
  param("q",{"type":"string","maxLength":200},"keep the items that contain it, ignoring case")]
stream_param = param("stream",B,"answer NDJSON lines as the run goes (StreamLine)")
queries = {
 ("GET","/caps"):[param("refresh",B,"probe again instead of using results up to 20 s old")],
 ("GET","/sandboxes"):page_params,
 ("DELETE","/sandboxes/{id}"):[param("purge",B,"also remove its own workspace (never a project dir)")],
 ("POST","/sandboxes/{id}/exec"):[stream_param], ("POST","/sandboxes/{id}/run"):[stream_param], ("POST","/sandboxes/{id}/install"):[stream_param],
 ("POST","/run-once"):[stream_param], ("POST","/agent-shell"):[stream_param],
 ("GET","/sandboxes/{id}/files"):[param("path",S,"a folder, relative to the workspace (default: the workspace)")],
 ("GET","/sandboxes/{id}/file"):[param("path",S,required=True),param("encoding",{"type":"string","enum":["utf-8","base64"]}),
   param("limit",{"type":"integer","minimum":1,"maximum":2097152,"default":2097152},"bytes")],
 ("DELETE","/sandboxes/{id}/file"):[param("path",S,required=True)],
 ("GET","/sandboxes/{id}/events"):[param("runId",S),param("kind",S,"a kind or its prefix: file, proc, net, denied, trace"),param("limit",{"type":"integer","minimum":1,"maximum":5000,"default":500})],
 ("GET","/runs"):[{**page_params[0],"schema":{"type":"integer","minimum":1,"maximum":5000,"default":50}},page_params[1],page_params[2],
   param("sandboxId",S),param("source",{"type":"string","enum":["mcp","rest","cli","agent-shell","scheduler","code","space-app"]}),
   param("refused",B,"only the runs that were refused (nothing ran)"),
   param("state",{"type":"string","enum":["running"]},"running: the background runs going on now (no paging)")],
 ("GET","/runs/{id}/log"):[param("offset",I,"bytes; negative: from the end"),param("limit",{"type":"integer","minimum":1,"maximum":1048576,"default":131072},"bytes"),
   param("follow",B,"answer NDJSON lines as the log grows (LogLine)")],
 ("POST","/schedules/{id}/run"):[param("wait",B,"answer with the run when it ends")],
 ("GET","/schedules/{id}/history"):[param("limit",{"type":"integer","minimum":1,"maximum":100,"default":50})],
}
# Successes other than 200 with the route's answer.
created = {("POST","/sandboxes"),("POST","/schedules")}
background = {("POST","/sandboxes/{id}/exec"),("POST","/sandboxes/{id}/run"),("POST","/run-once")}
streams = {("POST","/sandboxes/{id}/exec"),("POST","/sandboxes/{id}/run"),("POST","/sandboxes/{id}/install"),("POST","/run-once"),("POST","/agent-shell")}
# Routes that can meet one of the engine's bounds (maxSandboxes; for
# runs: the queue's length, maxBackgroundRuns, maxRunsPerSandbox): 429.
bounded={("POST","/sandboxes"),("POST","/agent-shell"),
  ("POST","/sandboxes/{id}/exec"),("POST","/sandboxes/{id}/run"),("POST","/sandboxes/{id}/install"),("POST","/run-once")}
# Routes that answer 409: a sandbox name more than one has, a state that
# forbids the change.
conflicts={("PUT","/autostart"),("POST","/schedules/{id}/run")}
ERR = {"$ref":"#/components/responses/Error"}

def json_content(schema): return {"application/json":{"schema":schema}}

def operation(m, p, summary, req, resp, op_id, params, extra_errors=()):
    ok = {"description":"OK","content":json_content(A(resp) if resp else {"type":"object"})}
    op = {"operationId":op_id,"summary":summary,"responses":{}}
    errors = {"401","403","500","503"} | set(extra_errors)
    if req or params: errors.add("400")
    if "{id}" in p: errors.add("404")
    op["responses"]["200"] = ok
    if req:
        # An empty body is an empty object to every handler: required
        # only when the schema has fields it needs.
        op["requestBody"] = {"required": bool(schemas[req].get("required")),"content":json_content(A(req))}
    if params: op["parameters"] = params
    for code in sorted(errors): op["responses"][code] = ERR
    return op

paths = {}
for m,p,summary,req,resp in routes:
    key = (m,p)
    assert key in operation_ids, "no operationId for %s %s: add it to operation_ids" % key
    resp = resp or reply_schema.get(key)
    assert resp, "no answer schema for %s %s: name it in the table or reply_schema" % key
    params = []
    if "{id}" in p:
        params.append({"name":"id","in":"path","required":True,"schema":{"type":"string"},"description":"an id, or a unique name" if p.startswith("/sandboxes/") else "an id"})
    params += queries.get(key,[])
    errs = []
    if key in bounded: errs.append("429")
    if key in conflicts or p.startswith("/sandboxes/{id}"): errs.append("409")
    if p.startswith("/schedules"): errs.append("409")
    op = operation(m, p, summary, request_schema.get(key, req), resp, operation_ids[key], params, errs)
    if key in created:
        op["responses"]["201"] = {"description":"Created","content":op["responses"].pop("200")["content"]}
    if key == ("GET","/health"):
        op["responses"]["503"] = {"description":"the engine could not start: ok is false and error says why","content":json_content(A("Health"))}
    if key in background:
        op["responses"]["202"] = {"description":"Accepted: a background run started (background: true); its record has state running","content":json_content(A("RunReply"))}
    if key in streams:
        op["responses"]["200"]["content"]["application/x-ndjson"] = {"schema":{"type":"string","description":"NDJSON (with ?stream=1): each line a StreamLine"},"x-ndjson-line":A("StreamLine")}
    if key == ("GET","/runs/{id}/log"):
        op["responses"]["200"]["content"]["application/x-ndjson"] = {"schema":{"type":"string","description":"NDJSON (with ?follow=1): each line a LogLine"},"x-ndjson-line":A("LogLine")}
    if key == ("POST","/schedules/{id}/run"):
        op["responses"]["202"] = {"description":"Accepted: the run started (without ?wait)","content":json_content(A("RunStarted"))}
    if key == ("POST","/sandboxes/{id}/install") or key == ("POST","/schedules/{id}/run"):
        pass
    paths.setdefault("/api/sandbox"+p,{})[m.lower()]=op
paths["/api/sandbox/agent-shell"]["post"]["responses"]["101"]={"description":"Switching Protocols to senclaw-attach/1 (asked for with Connection: Upgrade, Upgrade: senclaw-attach/1; the same token, Host and Origin checks as any request come first). Then both sides send frames: a type byte, a big-endian uint32 length, the payload (at most 1 MiB). Client: '0' stdin bytes, 'e' stdin ended, 'c' control JSON {cols, rows} or {signal: INT|TERM|HUP|QUIT}. Server: '1' stdout, '2' stderr (a terminal's output as the stream of its first output descriptor), 's' the run's record once started (JSON), and last 'r' {result: RunReply} or {error: Error}. Closing the connection kills the run.",
  "headers":{"Upgrade":{"required":True,"schema":{"type":"string","const":"senclaw-attach/1"}},"Connection":{"required":True,"schema":{"type":"string","const":"Upgrade"}}}}
paths["/api/sandbox/agent-shell"]["post"]["parameters"] = paths["/api/sandbox/agent-shell"]["post"].get("parameters",[]) + [
  {"name":"Upgrade","in":"header","schema":{"type":"string","enum":["senclaw-attach/1"]},"description":"with Connection: Upgrade, attach the run (101)"}]
for p in ("/api/sandbox/sandboxes/{id}/exec",):
    paths[p]["post"]["responses"]["101"] = paths["/api/sandbox/agent-shell"]["post"]["responses"]["101"]
    paths[p]["post"]["parameters"] = paths[p]["post"].get("parameters",[]) + [
      {"name":"Upgrade","in":"header","schema":{"type":"string","enum":["senclaw-attach/1"]},"description":"with Connection: Upgrade, attach the run (101): senclaw shell"}]
space_routes = [
("GET","","Every Space App, running ones first, with the overview (counts of running, sandboxed, unsandboxed, needs restart, crash-looping, proxy denials).",None,"AppList"),
("POST","","Register (or update, for a known id) an app: JSON {dir, inPlace, env} for a folder (copied into the engine's apps/<id>/ unless inPlace, which passes the mount guards), or a zip of at most 50 MiB as the body (application/zip) or as the file part of a multipart form (with an optional env part, a JSON object). Unknown manifest fields, bad values, unmet requires, zip entries that climb out or are links: 400 naming the field; nothing registered. 201 when created, 200 when updated.","RegisterRequest","RegisterReply"),
("GET","/{id}","One app with its manifest, where it came from and its own environment (secret values masked).",None,"AppDetail"),
("DELETE","/{id}","Stop and forget an app (its sandbox, record and log); ?purge=true also removes the engine's copy of its files, never a folder run in place.",None,"AppDeleteReply"),
("POST","/{id}/start","Start an app by hand: resets crash-looping, the backoff and the launch count, forgets a person's stop. Waits for the first 2xx from healthPath unless ?wait=false. 400 for an unmet requirement (field requires.*), 409 when its port is held by another process (named; never killed), 403 when no isolation can be applied.",None,"StartReply"),
("POST","/{id}/stop","Stop an app as a person asks: SIGTERM to its whole tree, SIGKILL after stopTimeoutSec; not restarted, skipped by autostart until started again.",None,"AppStopReply"),
("POST","/{id}/restart","Stop (gracefully) and start again by hand; ?wait=false does not wait for health.",None,"StartReply"),
("GET","/{id}/runtime","What the app runs now: pid, uptime, launches, state, health with its history, CPU and RSS of the whole tree with five minutes of history, processes, sockets (at most 200), the proxy's counts and refused hosts, the launch's command and environment (secrets masked). An app's own token (daemonApi) may read its own.",None,"AppRuntime"),
("GET","/{id}/logs","The end of the app's log (stdout and stderr, captured by the engine, one banner line per launch with the isolation applied): ?limit bytes (default 131072, at most 1048576). ?follow=1 streams NDJSON: the first line is this same object, each next {text} what the app wrote since. An app's own token may read its own.",None,"LogChunk"),
("DELETE","/{id}/logs","Empty the app's log and remove its rotated files.",None,"LogClearReply"),
("GET","/{id}/sandbox","The app's sandbox configuration, what its running process got, needs restart with its reasons, which fields apply live and which at the next launch.",None,"AppSandboxView"),
("PUT","/{id}/sandbox","Change the sandbox configuration (fields left out keep their values; lists given replace). hosts applies to the running app at once; readMode, folders, network, loopback, backend, image, enabled and daemonApi from its next launch. The reply says which is which and whether it now needs a restart. Disabling a forced sandbox is 409 with the reason.","SandboxPatch","AppSandboxReply"),
("GET","/{id}/isolation","The effective isolation: what the running process got (or a launch would), its limits, and in words what is and is not enforced.",None,"AppIsolation"),
]
# Space Apps (issue #11): /api/space/apps/, app/spaceapps. Every field of
# every answer is listed.
space_ids = {
 ("GET",""):"listApps", ("POST",""):"registerApp", ("GET","/{id}"):"getApp", ("DELETE","/{id}"):"deleteApp",
 ("POST","/{id}/start"):"startApp", ("POST","/{id}/stop"):"stopApp", ("POST","/{id}/restart"):"restartApp",
 ("GET","/{id}/runtime"):"getAppRuntime", ("GET","/{id}/logs"):"getAppLogs", ("DELETE","/{id}/logs"):"clearAppLogs",
 ("GET","/{id}/sandbox"):"getAppSandbox", ("PUT","/{id}/sandbox"):"updateAppSandbox", ("GET","/{id}/isolation"):"getAppIsolation",
}
folder = always({"path":{"type":"string","description":"an absolute host folder (the mount guards apply), seen in the app's directory under its name"},"readOnly":B})
settings_props = {
  "enabled":{"type":"boolean","description":"run in a sandbox; false runs it on this machine with no barrier (isolation none)"},
  "readMode":{"type":"string","enum":["strict","allowlist","open"]},
  "network":{"type":"string","enum":["all","hosts","off"],"description":"all: public addresses; hosts: only the names in hosts; off: no egress. This machine's services only through loopback in every mode"},
  "hosts":{"type":"array","maxItems":64,"items":S,"description":"names for the hosts mode: exact, or *.name for it and its subdomains; a pasted URL becomes its host; localhost, metadata names and addresses are refused"},
  "loopback":{"type":"array","maxItems":16,"items":{"type":"integer","minimum":1,"maximum":65535}},
  "folders":{"type":"array","maxItems":16,"items":A("AppFolder")},
  "backend":{"type":"string","description":"auto, or an isolating backend of this engine (bwrap, docker, ...)"},
  "image":{"type":"string","description":"container image for a container backend (\"\": the engine's default)"},
  "daemonApi":{"type":"boolean","description":"give the app a token of its own (SENCLAW_APP_TOKEN, with SENCLAW_API_URL) that reaches only its runtime and logs"},
}
health = always({"status":{"type":"string","enum":["ok","failing","unknown"]},"httpStatus":I,"latencyMs":I,"lastError":S,"checkedAtMs":I},"httpStatus","lastError","checkedAtMs")
stats_point = always({"atMs":I,"cpuPercent":N,"rssMb":N})
holder = always({"pid":I,"command":S,"cwd":S,"exe":S},"cwd","exe")
app_states = ["stopped","starting","running","stopping","backoff","crash-looping","exited","failed","port-taken","outside"]
app_view = {
  "id":S,"name":S,"description":S,"dir":{"type":"string","description":"where it runs"},"inPlace":B,
  "port":{"type":"integer","description":"on 127.0.0.1 only; 0 until the engine picked one for a port-0 app"},"url":S,"healthPath":S,
  "restart":{"type":"string","enum":["on-failure","always","never"]},"autostart":B,
  "state":{"type":"string","enum":app_states},"stateText":{"type":"string","description":"the state in words, e.g. port taken by PID 42 (python3 -m http.server)"},
  "stoppedByUser":B,"pid":{"type":"integer","description":"the running launch's host pid (outside: the holder's); 0 when none"},
  "startedAtMs":I,"uptimeSec":I,"launches":{"type":"integer","description":"since a person last started it; warn above 3"},"totalLaunches":I,
  "health":A("AppHealth"),"cpuPercent":{"type":"number","description":"percent of one core, whole process tree"},"rssMb":N,
  "spark":arr(A("StatsPoint")),"sandbox":A("AppSandboxSummary"),
  "needsRestart":B,"needsRestartReasons":arr(S),"nextAttemptAtMs":I,"lastLog":arr(S),"portHolder":A("PortHolder"),
}
space_schemas = {
 "AppFolder":folder,
 "AppSandboxSettings":always(settings_props),
 "SandboxPatch":o(settings_props,None,{"additionalProperties":False,"description":"fields left out (or null) keep their values"}),
 "AppHealth":health,
 "StatsPoint":stats_point,
 "PortHolder":holder,
 "AppSandboxSummary":always({"enabled":B,"forced":B,"isolation":{"type":"string","description":"what the running process actually got (bwrap, docker, none, ...); empty when it does not run"},"backend":S,"readMode":S,"network":S,"hostCount":I,"denied":I,"recentDenied":arr(S),"allowed":I}),
 "AppView":always(app_view,"nextAttemptAtMs","portHolder"),
 "AppOverview":always({"apps":I,"running":I,"sandboxed":I,"unsandboxed":I,"needsRestart":I,"crashLooping":I,"denied":I,"isolation":S}),
 "AppList":always({"apps":arr(A("AppView")),"overview":A("AppOverview")}),
 "Manifest":{"type":"object","description":"senclaw-app.json; its JSON schema is app/spaceapps/senclaw-app.schema.json"},
 "AppDetail":always({**app_view,"manifest":A("Manifest"),"source":{"type":"string","description":"a folder, or zip upload"},"registeredAtMs":I,"env":strmap},"nextAttemptAtMs","portHolder"),
 "RegisterRequest":o({"dir":{"type":"string","description":"the app's folder, absolute, with senclaw-app.json at its root"},"inPlace":B,"env":strmap},["dir"],{"additionalProperties":False}),
 "RegisterReply":always({"app":A("AppView"),"created":B,"note":S}),
 "StartReply":always({"ok":{"type":"boolean","description":"it answered 2xx on its health path (with wait=false: it was launched)"},"note":S,"app":A("AppView")}),
 "AppStopReply":always({"ok":B,"app":A("AppView")}),
 "AppDeleteReply":always({"ok":B,"deleted":S,"files":{"type":"string","description":"purged, still on disk at DIR, or in place: DIR untouched"}}),
 "HealthPoint":always({"atMs":I,"ok":B,"status":I,"latencyMs":I,"error":S},"status","error"),
 "Socket":always({"pid":I,"kind":{"type":"string","enum":["tcp4","tcp6","udp4","udp6","unix"]},"local":S,"remote":S,"state":S},"remote"),
 "ProxyCounts":always({"allowed":I,"denied":I,"recentDenied":arr(S)}),
 "LaunchView":always({"n":I,"atMs":I,"runId":S,"pid":I,"isolation":S,"backend":S,"command":S,"port":I,"env":strmap,"settings":A("AppSandboxSettings"),"endedAtMs":I,"ended":S},"endedAtMs","ended"),
 "AppRuntime":always({"appId":S,"state":{"type":"string","enum":app_states},"stateText":S,"pid":I,"uptimeSec":I,"launches":I,"totalLaunches":I,"health":A("AppHealth"),"healthHistory":arr(A("HealthPoint")),
   "cpuPercent":N,"rssMb":N,"memoryLimitMb":I,"history":arr(A("StatsPoint")),"processes":arr(A("ProcessInfo")),"sockets":arr(A("Socket")),"socketsTruncated":B,
   "proxy":A("ProxyCounts"),"launch":{"oneOf":[A("LaunchView"),{"type":"null"}]},"lastLog":arr(S),"note":S},"note"),
 "LogChunk":always({"appId":S,"text":S,"bytes":I,"truncated":{"type":"boolean","description":"older output was left out"},"sizeBytes":I,"files":arr(S)}),
 "LogText":always({"text":S}),
 "LogClearReply":always({"ok":B,"cleared":S}),
 "AppSandboxView":always({"appId":S,"settings":A("AppSandboxSettings"),"forced":B,"lockReason":S,"running":{"oneOf":[A("AppSandboxSettings"),{"type":"null"}]},"isolation":S,
   "needsRestart":B,"needsRestartReasons":arr(S),"liveFields":arr(S),"restartFields":arr(S),"backends":arr(S)},"lockReason"),
 "AppSandboxReply":always({"sandbox":A("AppSandboxView"),"changed":arr(S),"appliedLive":arr(S),"pendingRestart":arr(S),"needsRestart":B,"note":S}),
 "AppIsolation":always({"appId":S,"running":B,"isolation":S,"backend":S,"limits":arr(S),"limitsMissing":arr(S),"enforced":arr(S),"notEnforced":arr(S),"note":S}),
}
schemas.update(space_schemas)
for m,p,summary,req,resp in space_routes:
    key = (m,p)
    assert key in space_ids, "no operationId for Space Apps route %s %s: add it to space_ids" % key
    params=[]
    if "{id}" in p:
        params.append({"name":"id","in":"path","required":True,"schema":{"type":"string"}})
    if m == "DELETE" and p == "/{id}":
        params.append(param("purge",B,"also remove the engine's copy of its files"))
    if p in ("/{id}/start","/{id}/restart"):
        params.append(param("wait",{"type":"boolean","default":True},"wait for the first 2xx from its health path"))
    if m == "GET" and p == "/{id}/logs":
        params.append(param("limit",{"type":"integer","minimum":1,"maximum":1048576,"default":131072},"bytes"))
        params.append(param("follow",B,"answer NDJSON lines as the app writes"))
    op = operation(m, p, summary, None, resp, space_ids[key], params, ["409"] if m in ("POST","PUT") else [])
    if req:
        content = json_content(A(req))
        if m == "POST" and p == "":
            content["application/zip"] = {"schema":{"type":"string","format":"binary","maxLength":52428800}}
            content["multipart/form-data"] = {"schema":o({"file":{"type":"string","format":"binary","description":"the app's zip, at most 50 MiB"},"env":{"type":"string","description":"a JSON object of the app's environment"}},["file"])}
            op["responses"]["201"] = {"description":"Created","content":json_content(A(resp))}
        op["requestBody"]={"required":True,"content":content}
        op["responses"]["400"] = ERR
    if m == "GET" and p == "/{id}/logs":
        op["responses"]["200"]["content"]["application/x-ndjson"] = {"schema":{"type":"string","description":"NDJSON (with ?follow=1): the first line a LogChunk, then {text} per write"},
          "x-ndjson-line":{"oneOf":[A("LogChunk"),A("LogText")]}}
    if p.endswith("/runtime") or p.endswith("/logs") and m == "GET":
        op["description"] = "Reachable with a Space App's own token (daemonApi) for that app only; another app's id answers 404."
    paths.setdefault("/api/space/apps"+p,{})[m.lower()]=op

# The routes outside the two APIs: the document itself, the dashboard's
# login and page, and MCP.
html = {"text/html":{"schema":{"type":"string"}}}
paths["/api/sandbox/openapi.json"] = {"get":{"operationId":"getOpenAPI","summary":"This document.","security":[],
  "responses":{"200":{"description":"OK","content":json_content({"type":"object"})},"401":ERR,"403":ERR}}}
paths["/login"] = {"get":{"operationId":"login","summary":"Redeem a one-time code of POST /login-codes (senclaw url): a session cookie (HttpOnly, SameSite=Strict) and a redirect to the dashboard.","security":[],
  "parameters":[param("code",S,required=True)],
  "responses":{"303":{"description":"See Other: to /, with the session cookie","headers":{"Set-Cookie":{"schema":S},"Location":{"schema":S}}},
    "401":{"description":"the code is not valid (any more): a page that says so","content":html},"403":ERR}}}
paths["/"] = {"get":{"operationId":"getDashboard","summary":"The dashboard (its page and files). Without a session it says how to open it (senclaw url).","security":[],
  "responses":{"200":{"description":"the dashboard","content":html},"401":{"description":"no session: a page that says to run senclaw url","content":html},"403":ERR,"404":{"description":"no such file"}}}}
jsonrpc = {"type":"object","description":"a JSON-RPC 2.0 message (or a batch) of the MCP protocol"}
mcp_err = {"description":"refused: no or wrong token (401), a session of another token (403), an unknown or closed session (404), not a valid MCP request (400); the transport's own answers are text","content":{"application/json":{"schema":A("Error")},"text/plain":{"schema":S}}}
paths["/mcp"] = {
 "post":{"operationId":"mcpPost","summary":"MCP Streamable HTTP transport (the 22 sbx_* tools): send a JSON-RPC message; initialize opens a session (Mcp-Session-Id in the answer's headers), later requests send it back.",
   "parameters":[{"name":"Mcp-Session-Id","in":"header","schema":S},{"name":"Mcp-Protocol-Version","in":"header","schema":S}],
   "requestBody":{"required":True,"content":json_content(jsonrpc)},
   "responses":{"200":{"description":"the JSON-RPC answer, as JSON or as an SSE stream","headers":{"Mcp-Session-Id":{"schema":S}},
      "content":{"application/json":{"schema":jsonrpc},"text/event-stream":{"schema":{"type":"string"}}}},
     "202":{"description":"Accepted: a notification or a response"},"400":mcp_err,"401":mcp_err,"403":mcp_err,"404":mcp_err,
     "429":{"description":"this token holds mcpMaxSessions sessions already: close one (DELETE /mcp) or wait for an idle one to be closed","content":json_content(A("Error"))}}},
 "get":{"operationId":"mcpStream","summary":"Open the session's SSE stream of server messages.","parameters":[{"name":"Mcp-Session-Id","in":"header","required":True,"schema":S}],
   "responses":{"200":{"description":"an SSE stream","content":{"text/event-stream":{"schema":{"type":"string"}}}},"400":mcp_err,"401":mcp_err,"403":mcp_err,"404":mcp_err,"405":mcp_err}},
 "delete":{"operationId":"mcpClose","summary":"Close the session.","parameters":[{"name":"Mcp-Session-Id","in":"header","required":True,"schema":S}],
   "responses":{"200":{"description":"closed"},"204":{"description":"closed"},"400":mcp_err,"401":mcp_err,"403":mcp_err,"404":mcp_err}},
}

ids = [op["operationId"] for ops in paths.values() for op in ops.values()]
assert len(ids) == len(set(ids)), "duplicate operationIds"
doc = {"openapi":"3.1.0",
  "info":{"title":"SenClaw Sandbox API","version":"1",
    "description":"The engine's REST API: sandboxes under /api/sandbox/, Space Apps under /api/space/apps/, and MCP at /mcp. Over the Unix socket ($XDG_RUNTIME_DIR/senclaw/api.sock, mode 0600) no token is needed; over TCP (127.0.0.1 only) send Authorization: Bearer <token from $XDG_CONFIG_HOME/senclaw/api-token>, and Host must be the loopback address (no DNS rebinding), Origin absent or this server's. Errors are {error, field?}: 400 bad input (the field named), 401 no or wrong token, 403 refused (policy, missing isolation, or a foreign Host or Origin), 404 unknown id, 409 a state that forbids it, 429 past one of the engine's bounds (the setting named in field), 500 the engine failed, 503 the engine could not start (its store did not open; the reason says why). Streams are NDJSON (application/x-ndjson): one JSON object a line, described in x-ndjson-line.",
    "license":{"name":"No license chosen yet: all rights reserved by the copyright holders until one is published with the source"}},
  "servers":[{"url":"http://127.0.0.1:7878","description":"the daemon's default TCP listener (senclaw serve --listen ADDR; the dashboard's origin). The same API is served on the owner's Unix socket $XDG_RUNTIME_DIR/senclaw/api.sock without a token."}],
  "components":{"securitySchemes":{"bearer":{"type":"http","scheme":"bearer","description":"the token in $XDG_CONFIG_HOME/senclaw/api-token, or the dashboard's page token with its session cookie"}},
    "schemas":schemas,"responses":{"Error":{"description":"An error: what was refused, why, what to do","content":json_content(A("Error"))}}},
  "security":[{"bearer":[]}],"paths":paths}
import sys
out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "app", "api", "openapi.json")
open(out,"w").write(json.dumps(doc,indent=1)+"\n")
