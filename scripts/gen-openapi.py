import json
routes = [
("GET","/status","Engine status: isolation state, version, uptime, sandbox counts.",None,"Status"),
("GET","/health","Liveness: {ok: true}.",None,None),
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
("GET","/runs","Recent runs, newest first: one page (?limit 1-5000, default 50, ?offset) of those of ?sandboxId matching ?q (command, language, sandbox, source, isolation) and ?source (scheduler, agent-shell, mcp, ...), with the total that match; ?state=running lists the background runs going on now.",None,"RunPage"),
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
obj = {"type":"object"}
schemas = {
 "Error":{"type":"object","required":["error"],"properties":{"error":{"type":"string","description":"what was refused, why, and what to do"},"field":{"type":"string","description":"the bad input's field"},"refused":{"type":"boolean","description":"a run refused by policy or missing isolation"},"run":{"$ref":"#/components/schemas/RunRecord"}}},
 "SandboxConfig":{"type":"object","additionalProperties":False,"properties":{
   "name":{"type":"string"},"backend":{"type":"string","description":"bwrap, landlock, docker, direct or auto"},"image":{"type":"string"},
   "fsMode":{"type":"string","enum":["strict","allowlist","open"]},
   "mounts":{"type":"array","items":{"$ref":"#/components/schemas/Mount"}},"network":{"type":"boolean"},
   "listenPorts":{"type":"array","items":{"type":"integer","minimum":1024,"maximum":65535},"maxItems":16},
   "connectPorts":{"type":"array","items":{"type":"integer","minimum":1,"maximum":65535},"maxItems":16},
   "loopbackPorts":{"type":"array","items":{"type":"integer","minimum":1,"maximum":65535},"maxItems":16},
   "cpus":{"type":"number","minimum":0.1,"maximum":32},"memoryMb":{"type":"integer","minimum":64,"maximum":65536},
   "pids":{"type":"integer","minimum":16,"maximum":8192},"diskMb":{"type":"integer","minimum":16},
   "timeoutMs":{"type":"integer","minimum":1000,"maximum":600000},"env":{"type":"object","additionalProperties":{"type":"string"}},
   "projectDir":{"type":"string","description":"on create: a folder of the caller's as the writable workspace (never purged, no quota), checked as a read-write mount"}}},
 "Mount":{"type":"object","required":["source"],"properties":{"source":{"type":"string"},"target":{"type":"string"},"readOnly":{"type":"boolean"}}},
 "Sandbox":obj,"SandboxReply":{"type":"object","properties":{"sandbox":{"$ref":"#/components/schemas/Sandbox"},"note":{"type":"string"}}},
 "RunBody":{"type":"object","properties":{"command":{"type":"string"},"argv":{"type":"array","items":{"type":"string"}},"language":{"type":"string","enum":["python","node","bash"]},"code":{"type":"string"},"timeoutMs":{"type":"integer","minimum":1000,"maximum":600000,"description":"a foreground run's timeout"},"env":{"type":"object","additionalProperties":{"type":"string"}},"background":{"type":"boolean","description":"start it and return; it runs until it exits or is stopped, unless ttlMs or idleTtlMs"},"ttlMs":{"type":"integer","minimum":1000,"maximum":2592000000,"description":"a background run's deadline"},"idleTtlMs":{"type":"integer","minimum":1000,"maximum":2592000000,"description":"kill a background run after this long without CPU use or output"}}},
 "RunLog":{"type":"object","properties":{"runId":{"type":"string"},"offset":{"type":"integer"},"size":{"type":"integer"},"data":{"type":"string"},"running":{"type":"boolean"}}},
 "RunRecord":{"type":"object","properties":{"id":{"type":"string"},"sandboxId":{"type":"string"},"source":{"type":"string"},"scheduleId":{"type":"string","description":"the schedule that fired it (source scheduler)"},"kind":{"type":"string"},"command":{"type":"string"},"isolation":{"type":"string","description":"what was really applied: bwrap, landlock, docker, none, none (degraded), refused: <reason>"},"exitCode":{"type":["integer","null"]},"timedOut":{"type":"boolean"},"truncated":{"type":"boolean"},"durationMs":{"type":"integer"}}},
 "RunReply":{"type":"object","properties":{"run":{"$ref":"#/components/schemas/RunRecord"},"ok":{"type":"boolean"},"stdout":{"type":"string"},"stderr":{"type":"string"},"note":{"type":"string"},"lifetime":{"type":"string","description":"a background run: how it ends"}}},
 "InstallBody":{"type":"object","properties":{"manager":{"type":"string","enum":["pip","npm"]},"packages":{"type":"array","items":{"type":"string"}},"timeoutMs":{"type":"integer"}}},
 "FileBody":{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"},"encoding":{"type":"string","enum":["utf-8","base64"]}}},
 "FileContent":{"type":"object","properties":{"path":{"type":"string"},"size":{"type":"integer"},"encoding":{"type":"string"},"content":{"type":"string"}}},
 "PathBody":{"type":"object","properties":{"path":{"type":"string"}}},
 "TargetBody":{"type":"object","properties":{"target":{"type":"string"}}},
 "KillBody":{"type":"object","properties":{"pid":{"type":"integer"}}},
 "FsModeBody":{"type":"object","properties":{"fsMode":{"type":"string","enum":["strict","allowlist","open"]}}},
 "PortsBody":{"type":"object","properties":{"listen":{"type":"array","items":{"type":"integer"}},"connect":{"type":"array","items":{"type":"integer"}},"loopback":{"type":"array","items":{"type":"integer"}}}},
 "TraceBody":{"type":"object","properties":{"enabled":{"type":"boolean"}}},
 "AgentShellBody":{"type":"object","properties":{"projectDir":{"type":"string","description":"the directory the command may write"},"command":{"type":"string"},"argv":{"type":"array","items":{"type":"string"}},"dir":{"type":"string","description":"where in the project the command starts"},"timeoutMs":{"type":"integer"},"env":{"type":"object","additionalProperties":{"type":"string"}},"hostEnv":{"type":"object","additionalProperties":{"type":"string"},"description":"the caller's environment, used only with the switch off (on the host)"},"agent":{"type":"string","pattern":"^[a-z0-9][a-z0-9-]{0,31}$"},"terminal":{"type":"object","description":"attached runs only: a terminal of cols x rows on the standard descriptors fds (1 or 2 among them)","properties":{"cols":{"type":"integer","minimum":1,"maximum":10000},"rows":{"type":"integer","minimum":1,"maximum":10000},"fds":{"type":"array","items":{"type":"integer","enum":[0,1,2]}}}}}},
 "ProjectBody":{"type":"object","properties":{"projectDir":{"type":"string"}}},
 "Stats":obj,"Settings":obj,"ExecPolicy":{"type":"object","properties":{k:{"type":"boolean"} for k in ["execShell","execNetwork","runPython","runNode","codeNetwork","schedulerScript","schedulerNetwork"]}},
 "Capabilities":obj,"Status":obj,
 "Autostart":{"type":"object","required":["enabled","path"],"properties":{"enabled":{"type":"boolean","description":"the entry exists and is not Hidden=true"},"path":{"type":"string"},"exec":{"type":"string","description":"the program it starts"},"foreign":{"type":"boolean","description":"the file was not written by senclaw and is left alone"}}},
 "ScheduleSpec":{"type":"object","additionalProperties":False,"properties":{
   "name":{"type":"string","maxLength":100},
   "cron":{"type":"string","description":"five fields (minute hour day-of-month month day-of-week), or @hourly, @daily, @weekly, @monthly, @yearly, @every DURATION (at least 10s)"},
   "timeZone":{"type":"string","description":"IANA zone name; empty for the engine's local zone"},
   "language":{"type":"string","enum":["bash","python","node"],"description":"bash: code is a script"},
   "code":{"type":"string"},"env":{"type":"object","additionalProperties":{"type":"string"}},
   "timeoutMs":{"type":"integer","minimum":1000,"maximum":600000,"description":"default 600000"},
   "network":{"type":"boolean","description":"wanted; with Scheduler scripts on it also needs the policy's schedulerNetwork, else the run is refused"},
   "paused":{"type":"boolean"},"missed":{"type":"string","enum":["skip","once"],"description":"times missed while the engine was down: forgotten (skip, default) or one catch-up run (once)"},
   "jitterSec":{"type":"integer","minimum":0,"maximum":3600,"description":"a fixed delay per schedule below this, to spread schedules sharing a minute"}}},
 "Firing":{"type":"object","properties":{"at":{"type":"string","format":"date-time"},"trigger":{"type":"string","enum":["schedule","catch-up","manual"]},
   "outcome":{"type":"string","enum":["ok","failed","refused","skipped","missed","running"]},"runId":{"type":"string"},"startedAt":{"type":"string","format":"date-time"},
   "exitCode":{"type":["integer","null"]},"isolation":{"type":"string"},"durationMs":{"type":"integer"},"reason":{"type":"string"},"missed":{"type":"integer"}}},
 "Schedule":{"type":"object","properties":{"id":{"type":"string"},"name":{"type":"string"},"cron":{"type":"string"},"timeZone":{"type":"string"},"zone":{"type":"string"},
   "description":{"type":"string","description":"the expression in words"},"language":{"type":"string"},"code":{"type":"string"},"summary":{"type":"string"},
   "env":{"type":"object","additionalProperties":{"type":"string"}},"timeoutMs":{"type":"integer"},"network":{"type":"boolean"},"paused":{"type":"boolean"},
   "missed":{"type":"string"},"jitterSec":{"type":"integer"},"tenant":{"type":"string","description":"the owning tenant; empty until tenants exist"},
   "nextRun":{"type":["string","null"],"format":"date-time"},"running":{"type":"boolean"},"lastRun":{"oneOf":[{"$ref":"#/components/schemas/Firing"},{"type":"null"}]},
   "createdAt":{"type":"string","format":"date-time"},"updatedAt":{"type":"string","format":"date-time"}}},
 "ScheduleList":{"type":"object","properties":{"schedules":{"type":"array","items":{"$ref":"#/components/schemas/Schedule"}}}},
 "ScheduleReply":{"type":"object","properties":{"schedule":{"$ref":"#/components/schemas/Schedule"},"note":{"type":"string"}}},
 "ScheduleHistory":{"type":"object","properties":{"history":{"type":"array","items":{"$ref":"#/components/schemas/Firing"}}}},
 "AutostartBody":{"type":"object","required":["enabled"],"additionalProperties":False,"properties":{"enabled":{"type":"boolean"}}},
}
schemas["SandboxPage"]={"type":"object","required":["sandboxes","total","running"],"properties":{"sandboxes":{"type":"array","items":{"$ref":"#/components/schemas/Sandbox"}},"total":{"type":"integer","description":"sandboxes that match ?q, on every page"},"running":{"type":"integer","description":"sandboxes with a run going, of all"}}}
schemas["RunPage"]={"type":"object","required":["runs","total"],"properties":{"runs":{"type":"array","items":{"$ref":"#/components/schemas/RunRecord"}},"total":{"type":"integer","description":"runs that match, on every page"}}}
# Query parameters of the paged lists.
page_params=[{"name":"limit","in":"query","schema":{"type":"integer","minimum":1}},{"name":"offset","in":"query","schema":{"type":"integer","minimum":0}},{"name":"q","in":"query","schema":{"type":"string","maxLength":200},"description":"keep the items that contain it, ignoring case"}]
# Routes that can meet one of the engine's bounds (maxSandboxes): 429.
bounded={("POST","/sandboxes"),("POST","/agent-shell")}
queries={("GET","/sandboxes"):page_params,("GET","/runs"):page_params+[{"name":"sandboxId","in":"query","schema":{"type":"string"}}]}
schemas["ExecPolicy"]["properties"]["execFsMode"]={"type":"string","enum":["strict","allowlist","open"]}
schemas["ExecPolicy"]["properties"]["execLoopback"]={"type":"array","items":{"type":"integer"}}
paths = {}
for m,p,summary,req,resp in routes:
    op = {"summary":summary,"responses":{
      "200":{"description":"OK","content":{"application/json":{"schema":({"$ref":"#/components/schemas/"+resp} if resp else {"type":"object"})}}},
      "400":{"$ref":"#/components/responses/Error"},"401":{"$ref":"#/components/responses/Error"},"403":{"$ref":"#/components/responses/Error"},
      "404":{"$ref":"#/components/responses/Error"},"409":{"$ref":"#/components/responses/Error"},"503":{"$ref":"#/components/responses/Error"}}}
    if req:
        op["requestBody"]={"content":{"application/json":{"schema":{"$ref":"#/components/schemas/"+req}}}}
    params=[]
    if "{id}" in p:
        params.append({"name":"id","in":"path","required":True,"schema":{"type":"string"}})
    params += queries.get((m,p),[])
    if (m,p) in bounded:
        op["responses"]["429"]={"$ref":"#/components/responses/Error"}
    if params: op["parameters"]=params
    paths.setdefault("/api/sandbox"+p,{})[m.lower()]=op
schemas["ExecBody"]=json.loads(json.dumps(schemas["RunBody"]))
schemas["ExecBody"]["properties"]["terminal"]=schemas["AgentShellBody"]["properties"]["terminal"]
schemas["ExecBody"]["properties"]["interactive"]={"type":"boolean","description":"attached runs only: a person is at it (senclaw shell); no deadline unless timeoutMs, and the record says interactive"}
paths["/api/sandbox/agent-shell"]["post"]["responses"]["101"]={"description":"Switching Protocols to senclaw-attach/1 (asked for with Connection: Upgrade, Upgrade: senclaw-attach/1; the same token, Host and Origin checks as any request come first). Then both sides send frames: a type byte, a big-endian uint32 length, the payload (at most 1 MiB). Client: '0' stdin bytes, 'e' stdin ended, 'c' control JSON {cols, rows} or {signal: INT|TERM|HUP|QUIT}. Server: '1' stdout, '2' stderr (a terminal's output as the stream of its first output descriptor), 's' the run's record once started (JSON), and last 'r' {result: RunReply} or {error: Error}. Closing the connection kills the run."}
paths["/api/sandbox/sandboxes/{id}/exec"]["post"]["responses"]["101"]=paths["/api/sandbox/agent-shell"]["post"]["responses"]["101"]
# Space Apps (issue #11): /api/space/apps/, app/spaceapps. Every field of
# every answer is listed; "A" is a schema reference.
def A(name): return {"$ref":"#/components/schemas/"+name}
def arr(x): return {"type":"array","items":x}
S, I, B, N = {"type":"string"}, {"type":"integer"}, {"type":"boolean"}, {"type":"number"}
def o(props, req=None, extra=None):
    d = {"type":"object","properties":props}
    if req: d["required"]=req
    if extra: d.update(extra)
    return d
strmap = {"type":"object","additionalProperties":{"type":"string"}}
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
folder = o({"path":{"type":"string","description":"an absolute host folder (the mount guards apply), seen in the app's directory under its name"},"readOnly":B},["path"])
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
health = o({"status":{"type":"string","enum":["ok","failing","unknown"]},"httpStatus":I,"latencyMs":I,"lastError":S,"checkedAtMs":I})
stats_point = o({"atMs":I,"cpuPercent":N,"rssMb":N})
holder = o({"pid":I,"command":S,"cwd":S,"exe":S})
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
 "AppSandboxSettings":o(settings_props),
 "SandboxPatch":o(settings_props,None,{"additionalProperties":False,"description":"fields left out (or null) keep their values"}),
 "AppHealth":health,
 "StatsPoint":stats_point,
 "PortHolder":holder,
 "AppSandboxSummary":o({"enabled":B,"forced":B,"isolation":{"type":"string","description":"what the running process actually got (bwrap, docker, none, ...); empty when it does not run"},"backend":S,"readMode":S,"network":S,"hostCount":I,"denied":I,"recentDenied":arr(S),"allowed":I}),
 "AppView":o(app_view),
 "AppOverview":o({"apps":I,"running":I,"sandboxed":I,"unsandboxed":I,"needsRestart":I,"crashLooping":I,"denied":I,"isolation":S}),
 "AppList":o({"apps":arr(A("AppView")),"overview":A("AppOverview")}),
 "Manifest":{"type":"object","description":"senclaw-app.json; its JSON schema is app/spaceapps/senclaw-app.schema.json"},
 "AppDetail":{"allOf":[A("AppView"),o({"manifest":A("Manifest"),"source":{"type":"string","description":"a folder, or zip upload"},"registeredAtMs":I,"env":strmap})]},
 "RegisterRequest":o({"dir":{"type":"string","description":"the app's folder, absolute, with senclaw-app.json at its root"},"inPlace":B,"env":strmap},["dir"],{"additionalProperties":False}),
 "RegisterReply":o({"app":A("AppView"),"created":B,"note":S}),
 "StartReply":o({"ok":{"type":"boolean","description":"it answered 2xx on its health path (with wait=false: it was launched)"},"note":S,"app":A("AppView")}),
 "AppStopReply":o({"ok":B,"app":A("AppView")}),
 "AppDeleteReply":o({"ok":B,"deleted":S,"files":{"type":"string","description":"purged, still on disk at DIR, or in place: DIR untouched"}}),
 "HealthPoint":o({"atMs":I,"ok":B,"status":I,"latencyMs":I,"error":S}),
 "ProcessInfo":o({"pid":I,"ppid":I,"pgid":I,"command":S,"cpuPercent":N,"rssMb":N,"rssBytes":I,"elapsedSec":N}),
 "Socket":o({"pid":I,"kind":{"type":"string","enum":["tcp4","tcp6","udp4","udp6","unix"]},"local":S,"remote":S,"state":S}),
 "ProxyCounts":o({"allowed":I,"denied":I,"recentDenied":arr(S)}),
 "LaunchView":o({"n":I,"atMs":I,"runId":S,"pid":I,"isolation":S,"backend":S,"command":S,"port":I,"env":strmap,"settings":A("AppSandboxSettings"),"endedAtMs":I,"ended":S}),
 "AppRuntime":o({"appId":S,"state":{"type":"string","enum":app_states},"stateText":S,"pid":I,"uptimeSec":I,"launches":I,"totalLaunches":I,"health":A("AppHealth"),"healthHistory":arr(A("HealthPoint")),
   "cpuPercent":N,"rssMb":N,"memoryLimitMb":I,"history":arr(A("StatsPoint")),"processes":arr(A("ProcessInfo")),"sockets":arr(A("Socket")),"socketsTruncated":B,
   "proxy":A("ProxyCounts"),"launch":{"oneOf":[A("LaunchView"),{"type":"null"}]},"lastLog":arr(S),"note":S}),
 "LogChunk":o({"appId":S,"text":S,"bytes":I,"truncated":{"type":"boolean","description":"older output was left out"},"sizeBytes":I,"files":arr(S)}),
 "LogClearReply":o({"ok":B,"cleared":S}),
 "AppSandboxView":o({"appId":S,"settings":A("AppSandboxSettings"),"forced":B,"lockReason":S,"running":{"oneOf":[A("AppSandboxSettings"),{"type":"null"}]},"isolation":S,
   "needsRestart":B,"needsRestartReasons":arr(S),"liveFields":arr(S),"restartFields":arr(S),"backends":arr(S)}),
 "AppSandboxReply":o({"sandbox":A("AppSandboxView"),"changed":arr(S),"appliedLive":arr(S),"pendingRestart":arr(S),"needsRestart":B,"note":S}),
 "AppIsolation":o({"appId":S,"running":B,"isolation":S,"backend":S,"limits":arr(S),"limitsMissing":arr(S),"enforced":arr(S),"notEnforced":arr(S),"note":S}),
}
schemas.update(space_schemas)
for m,p,summary,req,resp in space_routes:
    op = {"summary":summary,"responses":{
      "200":{"description":"OK","content":{"application/json":{"schema":A(resp)}}},
      "400":{"$ref":"#/components/responses/Error"},"401":{"$ref":"#/components/responses/Error"},"403":{"$ref":"#/components/responses/Error"},
      "404":{"$ref":"#/components/responses/Error"},"409":{"$ref":"#/components/responses/Error"},"503":{"$ref":"#/components/responses/Error"}}}
    if req:
        content = {"application/json":{"schema":A(req)}}
        if m == "POST" and p == "":
            content["application/zip"] = {"schema":{"type":"string","format":"binary","maxLength":52428800}}
            content["multipart/form-data"] = {"schema":o({"file":{"type":"string","format":"binary","description":"the app's zip, at most 50 MiB"},"env":{"type":"string","description":"a JSON object of the app's environment"}},["file"])}
            op["responses"]["201"] = {"description":"Created","content":{"application/json":{"schema":A(resp)}}}
        op["requestBody"]={"content":content}
    params=[]
    if "{id}" in p:
        params.append({"name":"id","in":"path","required":True,"schema":{"type":"string"}})
    if p == "/{id}":
        pass
    if m == "DELETE" and p == "/{id}":
        params.append({"name":"purge","in":"query","schema":B})
    if p in ("/{id}/start","/{id}/restart"):
        params.append({"name":"wait","in":"query","schema":{"type":"boolean","default":True}})
    if m == "GET" and p == "/{id}/logs":
        params.append({"name":"limit","in":"query","schema":{"type":"integer","minimum":1,"maximum":1048576,"default":131072}})
        params.append({"name":"follow","in":"query","schema":B})
        op["responses"]["200"]["content"]["application/x-ndjson"] = {"schema":{"type":"string","description":"first line a LogChunk, then {\"text\": ...} per write"}}
    if p.endswith("/runtime") or p.endswith("/logs") and m == "GET":
        op["description"] = "Reachable with a Space App's own token (daemonApi) for that app only; another app's id answers 404."
    if params: op["parameters"]=params
    paths.setdefault("/api/space/apps"+p,{})[m.lower()]=op
doc = {"openapi":"3.1.0","info":{"title":"SenClaw Sandbox API","version":"1","description":"The engine's REST API: sandboxes under /api/sandbox/, Space Apps under /api/space/apps/. Over the Unix socket ($XDG_RUNTIME_DIR/senclaw/api.sock, mode 0600) no token is needed; over TCP (127.0.0.1) send Authorization: Bearer <token from $XDG_CONFIG_HOME/senclaw/api-token>. Errors are {error, field?}. The MCP tools are served by the same daemon at /mcp (MCP Streamable HTTP transport, same authentication)."},
  "components":{"securitySchemes":{"bearer":{"type":"http","scheme":"bearer"}},"schemas":schemas,"responses":{"Error":{"description":"An error: what was refused, why, what to do","content":{"application/json":{"schema":{"$ref":"#/components/schemas/Error"}}}}}},
  "security":[{"bearer":[]}],"paths":paths}
open(__import__("os").path.join(__import__("os").path.dirname(__file__), "..", "app", "api", "openapi.json"),"w").write(json.dumps(doc,indent=1)+"\n")
