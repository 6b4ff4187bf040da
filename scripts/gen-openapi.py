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
("GET","/whoami","Who this request's principal is (owner, agent, app or tenant; see app/principal): its name, tenant, the scopes it holds and its tool policy (tools: null allows every tool its scopes allow). ?tool=NAME also asks whether it may call that MCP tool now: 403 naming the missing scope or the tool policy (a security event), as the MCP faces ask before each call.",None,"Whoami"),
("GET","/health","Liveness: {ok: true}; 503 {ok: false, error} when the engine could not start (\"store damaged: ...\": run senclaw doctor), which this route and /daemon/stop still answer.",None,None),
("GET","/caps","Capabilities: each backend's probe state, version, reason and what it enforces, and each Docker engine's (the local one and the settings' named ones: state, version, CPUs, memory); ?refresh=1 probes again.",None,"Capabilities"),
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
("GET","/sandboxes/{id}/file","Read a file (?path=, ?encoding=base64, ?limit=bytes up to 2 MiB); with ?raw=1 the whole file, of any size, as the body (application/octet-stream, senclaw cp).",None,"FileContent"),
("PUT","/sandboxes/{id}/file","Write a file, creating parent folders; refused inside read-only mounts. With ?raw=1&path= the body is the file itself, streamed, of any size the disk quota allows (senclaw cp).","FileBody",None),
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
("DELETE","/sandboxes/{id}/cache","Empty the sandbox's package caches (pip, npm, Go, Cargo): its project's for a sandbox whose workspace is a project (the agent shell's, create --here), else those at the usual places in its workspace. 400 for a sandbox without (a one-shot's, a Space App's).",None,"CachesCleared"),
("GET","/caches","The package caches that last: each project's (of the agent shell and run --here, kept in the engine's data dir and bound at /tmp/senclaw-cache in the project's bwrap runs, never into another project's) and each persistent sandbox's (at the usual places in its workspace, counted in its disk quota), with the room they take.",None,"CacheList"),
("DELETE","/caches","Empty every package cache of every project and sandbox; runs going on keep empty ones.",None,"CachesCleared"),
("GET","/settings","The settings (defaults for new sandboxes, allowlist, sandbox user, ...).",None,"Settings"),
("PUT","/settings","Merge and save settings; validated like sandboxes.","Settings","Settings"),
("GET","/exec-policy","The enforcement switches.",None,"ExecPolicy"),
("PUT","/exec-policy","Merge and save the enforcement switches.","ExecPolicy","ExecPolicy"),
("GET","/runs","Recent runs, newest first: one page (?limit 1-5000, default 50, ?offset) of those of ?sandboxId matching ?q (command, language, sandbox, source, isolation) and ?source (scheduler, agent-shell, mcp, ...), only the refused ones with ?refused=true, with the total that match; ?state=running lists the background runs going on now.",None,"RunPage"),
("GET","/runs/{id}","One run record.",None,"RunRecord"),
("GET","/runs/{id}/log","A run's output (?offset bytes, negative from the end; ?limit bytes, default 131072, at most 1048576): a background run's log, what a foreground run going on writes, or what a finished run's record keeps; ?follow=1 streams NDJSON lines {data} as it grows ({skipped} for bytes not kept) and {end: RunRecord} when the run is over.",None,"RunLog"),
("POST","/runs/{id}/kill","Kill one run (a background run, say); killed is false when it had ended.",None,None),
("POST","/run-once","Run in a throwaway sandbox (its config fields may be given too); removed afterwards, its record kept.","RunBody","RunReply"),
("POST","/agent-shell","Run an agent's shell command under the exec policy ({projectDir, command or argv, dir, timeoutMs, env, hostEnv, agent}). ?stream=1 streams NDJSON output; with Connection: Upgrade and Upgrade: senclaw-attach/1 the run is attached (101, see below).","AgentShellBody","RunReply"),
("POST","/agent-shell/check","What the agent shell would do in a project now, running nothing: {execShell, isolation} (none with the switch off), or the refusal (403) or bad project dir (400). Agent hooks ask it first.","ProjectBody",None),
("POST","/guard/check","What the shell guard does with a command (or an argv) now, running nothing: on the host (path host, the default: the documented off paths, where a match refuses the run) or in a sandbox (what guard.sandbox says: warn, deny or off), with the settings of now. senclaw guard check asks it.","GuardCheckBody","GuardReport"),
("POST","/policy/learn","Learn mode (senclaw run --learn): run a command once in its project, traced, in the widest sandbox the owner's policy allows it, and answer the narrowest project policy under which it would have run (fs mode and allowlist from its reads, the names and ports the proxy let it reach, the HTTP methods and paths it sent to the hosts the proxy looks into, the listen ports it used, a memory and a time limit with headroom over what it used) as a diff against the project's file; with write, save it as the project's .senclaw/policy.json. It never proposes what the owner's policy forbids: that is a note. The owner's alone.","PolicyLearnRequest","PolicyLearn"),
("POST","/policy/apply","Save a policy (a learn run's proposal: the dashboard's Apply) as the project's .senclaw/policy.json, checked first as a run would read it (a broken one is a 400 naming its line and column, and changes nothing); the answer is the policy check after. The owner's alone.","PolicyApplyRequest","PolicyCheck"),
("POST","/policy/check","What the layered policy files make of a command in a project, running nothing (senclaw policy check): the effective policy with the file that decided each value, the project file's keys that were ignored because they would widen the owner's, and whether the run would be refused and why. A broken policy file is an answer (brokenFile, with its line and column), not an error. The owner's alone.","PolicyCheckRequest","PolicyCheck"),
("GET","/integrations","Where the agent integrations are installed: each agent's user settings, the agent sandboxes' project settings and the SHELL wrapper (read for the owner, never written).",None,None),
("POST","/stop-all","Stop every sandbox.",None,None),
("GET","/autostart","Start at login: whether the owner's XDG autostart entry (~/.config/autostart/senclaw.desktop) is there, as it is on disk.",None,"Autostart"),
("PUT","/autostart","Write ({enabled: true}) or remove ({enabled: false}) the autostart entry; an entry senclaw did not write is left alone (409).","AutostartBody","Autostart"),
("POST","/login-codes","A one-time code for a browser login (GET /login?code=..., good once within 60 s; the URL must not go on a command line, where every user sees it). With ?page=1 the code goes into an owner-only HTML page in the runtime dir whose form posts it to POST /login (senclaw open): the answer is that page's path, not the code; 409 when the dashboard is not served over HTTP.",None,None),
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
("GET","/secrets","The engine's secrets: name, hosts, header, format, where each value is kept (keyring or store), the variable its placeholder is in inside a sandbox, and the sandboxes that ask for it. Never a value.",None,"SecretList"),
("POST","/secrets","Add a secret ({name, hosts, header, format, value}): the value goes into the desktop keyring (Secret Service) where one answers, else sealed in the store, and is never answered. Sandboxes get a placeholder that the proxy swaps for it on the way to its hosts only.","SecretBody","SecretInfo"),
("PUT","/secrets/{name}","Rotate a secret's value ({value}); the runs going now send the new one with their next request.","SecretValueBody","SecretInfo"),
("DELETE","/secrets/{name}","Remove a secret; runs of sandboxes that ask for it are refused until it is added again or dropped from them.",None,"SecretRemoved"),
("GET","/tokens","The agent and tenant tokens, by name: name, kind, tenant, tool policy, when made, rotated and last used; never a secret (the engine keeps only their SHA-256).",None,"TokenList"),
("POST","/tokens","Make an agent token ({name, tenant?, tools?}): an agent principal (of the tenant, when one is named) with its own tool policy (absent: every tool its scopes allow). The answer holds the token's secret, shown this once. 409 when the name is taken.","TokenBody","TokenIssued"),
("PATCH","/tokens/{id}","Replace a token's own tool policy ({tools: [...]} or {tools: null} for none); id or name.","ToolsBody","TokenView"),
("POST","/tokens/{id}/rotate","Give a token (id or name) a new secret, shown this once; the old one stops working at once.",None,"TokenIssued"),
("DELETE","/tokens/{id}","Remove a token (id or name); it stops working at once.",None,None),
("GET","/tenants","The tenants, by name: quota, tool policy, granted paths, directory, how many tokens.",None,"TenantList"),
("POST","/tenants","Make a tenant ({name, quota?, tools?, paths?}): its directory tenants/<name>/ (workspace/ for its folders, runtime/ for what it installs), a quota (default 20 sandboxes, 4 runs at once, 4096 MB), a tool policy (default sbx_capabilities, sbx_events, sbx_run, sbx_runs) and its first token, whose secret the answer shows this once.","TenantBody","TenantAdded"),
("GET","/tenants/{id}","One tenant.",None,"TenantView"),
("PATCH","/tenants/{id}","Change a tenant's quota, tool policy ({tools: null}: none) or granted paths (host folders beyond its directory its sandboxes may mount; the mount guard still applies).","TenantPatch","TenantView"),
("DELETE","/tenants/{id}","Remove a tenant and its tokens (they stop working at once); ?purge=true also removes its directory. What it made stays, the owner's to see and remove, and runs no more.",None,"TenantDeleted"),
("GET","/security-events","The security events (the owner's alone), newest first: each refusal of a request (a scope its principal does not hold: security.scope_denied; a tool its policy leaves out: security.tool_policy_denied; another tenant's id: security.cross_tenant_denied; a token nobody has: security.token_rejected; the LAN listener's lockouts and rate limits: security.lan_*) and degraded guarantees, with the principal, where it came from, the request's first 200 characters and the reason. ?limit 1-1000 (default 50), ?before an id for the next page, ?principal (a label, or a kind and a colon), ?kind (a kind or its prefix), ?tenant (a slug, - for the owner's own); ?follow=1 streams NDJSON: the page oldest first, then each matching event as it is recorded.",None,"SecurityEventPage"),
("GET","/schedules/{id}/history","The schedule's firings, newest first (?limit 1-100, default 50): ok, failed, refused, skipped (overlap), missed (engine down), running.",None,"ScheduleHistory"),
]

# operationId of every route, by method and path.
operation_ids = {
 ("GET","/status"):"getStatus", ("GET","/whoami"):"getWhoami", ("GET","/health"):"getHealth", ("GET","/caps"):"getCapabilities",
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
 ("DELETE","/sandboxes/{id}/cache"):"clearSandboxCaches", ("GET","/caches"):"listCaches", ("DELETE","/caches"):"clearAllCaches",
 ("GET","/settings"):"getSettings", ("PUT","/settings"):"updateSettings",
 ("GET","/exec-policy"):"getExecPolicy", ("PUT","/exec-policy"):"updateExecPolicy",
 ("GET","/runs"):"listRuns", ("GET","/runs/{id}"):"getRun", ("GET","/runs/{id}/log"):"getRunLog", ("POST","/runs/{id}/kill"):"killRun",
 ("POST","/run-once"):"runOnce", ("POST","/agent-shell"):"runAgentShell", ("POST","/agent-shell/check"):"checkAgentShell", ("POST","/guard/check"):"checkShellGuard", ("POST","/policy/check"):"checkPolicy", ("POST","/policy/learn"):"learnPolicy", ("POST","/policy/apply"):"applyPolicy",
 ("GET","/integrations"):"listIntegrations", ("POST","/stop-all"):"stopAllSandboxes",
 ("GET","/autostart"):"getAutostart", ("PUT","/autostart"):"setAutostart",
 ("POST","/login-codes"):"createLoginCode", ("POST","/daemon/stop"):"stopDaemon",
 ("GET","/schedules"):"listSchedules", ("POST","/schedules"):"createSchedule", ("GET","/schedules/{id}"):"getSchedule",
 ("PATCH","/schedules/{id}"):"updateSchedule", ("DELETE","/schedules/{id}"):"deleteSchedule",
 ("POST","/schedules/{id}/pause"):"pauseSchedule", ("POST","/schedules/{id}/resume"):"resumeSchedule",
 ("POST","/schedules/{id}/run"):"runSchedule", ("GET","/schedules/{id}/history"):"getScheduleHistory",
 ("GET","/tokens"):"listTokens", ("POST","/tokens"):"createToken", ("PATCH","/tokens/{id}"):"updateToken",
 ("POST","/tokens/{id}/rotate"):"rotateToken", ("DELETE","/tokens/{id}"):"deleteToken",
 ("GET","/security-events"):"listSecurityEvents",
 ("GET","/tenants"):"listTenants", ("POST","/tenants"):"createTenant", ("GET","/tenants/{id}"):"getTenant", ("PATCH","/tenants/{id}"):"updateTenant", ("DELETE","/tenants/{id}"):"deleteTenant",
 ("GET","/doctor"):"runDoctor", ("POST","/doctor/repair"):"repairEngine",
 ("GET","/secrets"):"listSecrets", ("POST","/secrets"):"addSecret", ("PUT","/secrets/{name}"):"rotateSecret", ("DELETE","/secrets/{name}"):"removeSecret",
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
 ("DELETE","/schedules/{id}"):"ScheduleDeleted", ("DELETE","/tokens/{id}"):"TokenDeleted",
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
guard_groups = ["pipeToInterpreter","forkBomb","reverseShell","decodeAndRun","envDump","protectedPaths","unreadable"]
guard_group = {"type":"string","enum":guard_groups}
guard_mode = {"type":"string","enum":["warn","deny","off"]}
guard_path = {"type":"string","enum":["host","sandbox"]}
notes = {
 "note":D("one line a person reads first: what the sandbox or the run got; for a run, the rules it asked for and did not get (empty when everything held)"),
 "details":D("the rest, one fact an item: what each layer enforces and how, when a change takes effect, the limits that held", strs),
 "warnings":D("the rules that were asked for and are not enforced, and only those (empty when everything holds)", strs),
}

schemas = {
 "Error":always({"error":D("what was refused, why, and what to do"),"field":D("the bad input's field, or the setting of a bound (429)"),
   "scope":D("403: the scope the request needed, which its principal does not hold (see x-senclaw-scope)"),
   "tool":D("403: the tool (or operation group) the principal's tool policy leaves out"),
   "refused":D("a run refused by policy or missing isolation", B),"run":A("RunRecord")},"field","scope","tool","refused","run"),
 "Quota":always({"sandboxes":D("persistent sandboxes it may hold (0: no bound)", I),"runs":D("runs of it that may go on at once (0: no bound)", I),
   "diskMb":D("its directory and each of its workspaces, in MB (0: no bound)", I)}),
 "TokenView":always({"id":S,"name":S,"kind":{"type":"string","enum":["agent","tenant"]},"tenant":D("the tenant it acts for; absent: the owner's own objects"),
   "tools":D("its own tool policy; null: every tool its scopes allow (a tenant's policy applies on top)", {"type":["array","null"],"items":S}),
   "createdAt":T,"rotatedAt":D("its last new secret; absent: never rotated", T),"lastUsedAt":D("when a request last came with it (kept to the minute); absent: never", T)},"tenant","rotatedAt","lastUsedAt"),
 "TenantView":always({"name":D("its name, also its slug: its directory's name and what its objects record"),"quota":A("Quota"),
   "tools":D("its tool policy; null: every tool its scopes allow", {"type":["array","null"],"items":S}),
   "paths":D("host folders the owner granted it beyond its directory", strs),"createdAt":T,"updatedAt":T,
   "dir":D("its directory: workspace/ and runtime/"),"tokens":D("its tokens, its own and its agents'", I)}),
 "TenantList":always({"tenants":arr(A("TenantView"))}),
 "TenantAdded":always({"tenant":A("TenantView"),"token":A("TokenIssued")}),
 "TenantDeleted":always({"ok":B,"deleted":D("its name"),"files":D("purged, or kept at its directory")}),
 "TenantBody":o({"name":{"type":"string","pattern":"^[a-z0-9][a-z0-9._:-]{0,62}$"},"quota":A("Quota"),
   "tools":D("its tool policy (sbx_* tools and the groups agent_shell, schedules, space_apps); null: none", {"type":["array","null"],"items":S}),
   "paths":D("host folders granted beyond its directory", strs)},["name"],{"additionalProperties":False}),
 "TenantPatch":o({"quota":A("Quota"),"tools":{"type":["array","null"],"items":S,"description":"the tool policy; null: none"},"paths":strs},None,{"additionalProperties":False}),
 "SecurityEvent":always({"id":D("sorts by time: the newest is the largest"),"time":T,
   "kind":D("security.scope_denied, security.tool_policy_denied, security.cross_tenant_denied, security.token_rejected, security.lan_locked_out, security.lan_rate_limited, security.lan_owner_refused, ..."),
   "principal":D("who made the request: owner, agent:NAME, tenant:NAME, app:ID; empty when no token matched"),"tenant":D("the principal's tenant; absent: the owner's own"),
   "source":D("where it came from: socket, tcp, lan, inproc (the daemon's /mcp), engine, proxy"),"request":D("the request's first 200 characters: method and URL, or the MCP tool"),
   "reason":D("why it was refused, as the answer said"),"remote":D("the client's address, for a request over the network")},"tenant","remote"),
 "SecurityEventPage":always({"events":arr(A("SecurityEvent")),"more":D("older events match too (?before the last id)", B)}),
 "TokenList":always({"tokens":arr(A("TokenView"))}),
 "TokenIssued":always({"token":A("TokenView"),"secret":D("the token, shown this once: send it as Authorization: Bearer, or SENCLAW_TOKEN for the CLI")}),
 "TokenDeleted":always({"ok":B,"deleted":D("the id"),"name":S}),
 "TokenBody":o({"name":{"type":"string","pattern":"^[a-z0-9][a-z0-9._:-]{0,62}$"},"tenant":D("act for this tenant (its objects, quotas and policy)"),
   "tools":D("its own tool policy: sbx_* tools and the groups agent_shell, schedules, space_apps", strs)},["name"],{"additionalProperties":False}),
 "ToolsBody":o({"tools":{"type":["array","null"],"items":S,"description":"the tool policy; null: none"}},["tools"],{"additionalProperties":False}),
 "Whoami":always({"kind":{"type":"string","enum":["owner","agent","app","tenant"]},"name":D("the token's name, the tenant's or the app's id; absent for the owner"),
   "tokenId":D("the id of the token it came with (never the secret)"),"tenant":D("the tenant whose objects it acts on; absent: the owner's own"),
   "tools":D("its tool policy: the sbx_* tools and operation groups (agent_shell, schedules, space_apps) it may call; null: every one its scopes allow", {"type":["array","null"],"items":S}),
   "quota":A("Quota"),"paths":D("host folders the owner granted the tenant beyond its own directory", strs),
   "via":{"type":"string","enum":["socket","tcp","lan","inproc"]},"scopes":D("the scopes it holds", strs)},"name","tokenId","tenant","paths","via"),
 "Health":always({"ok":B,"error":D("when ok is false (503): why the engine could not start, e.g. store damaged: ...; senclaw doctor says what to do")},"error"),
 "LANInfo":always({"url":D("https://IP:PORT of the LAN listener"),"fingerprint":D("the SHA-256 of its TLS certificate, for clients to pin (AA:BB:...)")}),
 "Status":always({"version":S,"state":{"type":"string","enum":["isolated","degraded"]},"summary":S,"uptimeSec":I,
   "sandboxes":D("sandboxes the engine holds (of the requester's tenant, for anyone but the owner)", I),"running":D("of them, those with a run going", I),"dataDir":D("where the engine keeps its data: the owner's only", S),"pid":D("the engine's process: the owner's only", I),
   "lan":D("the LAN listener, when it is on (senclaw serve --lan, the lanListen setting): the API and /mcp over TLS to agent and tenant tokens only", A("LANInfo")),
   "runs":D("the whole engine's queue: all zero for a tenant", always({"running":D("foreground runs executing (at most concurrency)", I),"waiting":D("runs waiting in the queue (at most queueLength)", I),
     "background":D("background runs and Space App servers going (at most maxBackgroundRuns)", I)}))},"lan","dataDir","pid"),
 "Capability":always({"backend":S,"state":{"type":"string","enum":["never seen","seen and gone","healthy"]},"version":S,
   "reason":D("why the state is what it is, and what to do when it is not healthy"),"isolates":D("false for a backend that runs code with no barrier", B),
   "enforces":D("the rules it can enforce: fs, network, ports, memory, pids, cpu, disk, seccomp, ...", strs),
   "details":D("backend-specific facts (Landlock ABI, seccomp, cgroup version, daemon address)", strmap),"checkedAt":T},"version","details"),
 "Capabilities":always({"os":S,"state":{"type":"string","enum":["isolated","degraded"],"description":"isolated when at least one isolating backend is healthy"},
   "summary":S,"recommended":D("the backend a run without a choice gets"),"backends":arr(A("Capability")),
   "facilities":D("probes of what is not a backend (Landlock)", arr(A("Capability"))),
   "engines":D("the Docker engines: the local one and the settings' named ones, each on another machine, with state, version, CPUs and memory", arr(A("EngineInfo")))},"facilities"),
 "EngineInfo":always({"name":D("local (found by this machine's DOCKER_HOST or Docker context) or a name of the settings' engines"),
   "remote":D("on another machine: its sandboxes' files are volumes there", B),"host":D("the daemon's address"),"from":D("where the address came from"),
   "state":{"type":"string","enum":["never seen","seen and gone","healthy"]},"version":D("the daemon's version"),
   "cpus":D("the daemon's CPUs", I),"memoryBytes":D("the daemon's memory", I),
   "reason":D("the state in words, and what to do when it is not healthy"),"sandboxes":D("the sandboxes that live there", I)},
   "host","from","version","cpus","memoryBytes"),
 "EngineSettings":o({"name":{"type":"string","pattern":"^[a-z0-9][a-z0-9_.-]{0,31}$"},"context":D("a Docker context's name (its host and TLS material)"),
   "host":D("tcp://HOST:2376 (with TLS) or unix:///path (a socket forwarded from that machine); ssh:// is refused"),
   "caCert":D("the CA that signed the daemon's certificate, a path on this machine; needed for tcp://"),
   "cert":D("the client's certificate, a path on this machine"),"key":D("the client's key, a path on this machine")},["name"],
   {"description":"a Docker engine on another machine, by a Docker context or by its host and TLS material; TLS is always verified (a context that skips verification is refused)"}),
 "Languages":always({"languages":arr({"type":"string","enum":["python","node","bash"]})}),
 "FsModeInfo":always({"mode":fsmode,"label":S,"description":S}),
 "FsModes":always({"fsModes":arr(A("FsModeInfo"))}),
 "Mount":always({"source":D("an absolute host folder"),"target":D("where it appears, relative to the workspace (default: the folder's name)"),"readOnly":B,
   "copy":D("on a remote engine: the folder was copied into the sandbox once, when the mount was made, not bound", B)},"copy"),
 "PortRules":always({"listen":D("ports (>= 1024) the sandbox may bind, reachable from this machine at 127.0.0.1 only", arr(port)),
   "connect":D("remote ports it may dial", arr(port)),"loopback":D("this machine's own service ports it may call; empty: none", arr(port)),
   "domains":D("when not empty, the only names it may reach (exact, or *.example.com)", strs),"denyDomains":D("names it may never reach; deny wins over allow", strs),
   "allowHttp":D("HTTP rules: the proxy looks into the connections to each rule's host and lets through only the requests some rule of that host allows (403 with X-Senclaw-Refused otherwise)", arr(A("HTTPRule")))},"allowHttp"),
 "HTTPRule":o({"host":D("HOST[:PORT]; *.name for the name and its subdomains; without a port 443 and 80"),
   "methods":D("the methods allowed (GET, POST, ...); empty or absent: any", strs),
   "paths":D("the paths allowed: a prefix (/repos/), or a glob over the whole path with * (within a segment), ** (across) and ? (/repos/*/pulls); empty or absent: any", strs)},["host"]),
 "Refusal":always({"kind":{"type":"string","enum":["connect","http","secret","unix","write","more"],"description":"connect: a connection (host, port); http: a request (method, host, path) its host's HTTP rules refused; secret: a secret's placeholder sent where it does not go; unix: a Unix socket (target); write: a write of the file API (target); more: how many more were not kept"},
   "host":S,"port":I,"method":S,"path":S,"target":D("a Unix socket's or a refused write's path"),
   "rule":D("what refused it"),"allow":D("how to allow it; absent when nothing may"),"count":D("how many times during the run", I)},
   "host","port","method","path","target","allow"),
 "Secret":always({"name":S,"hosts":D("the only hosts its value is sent to (HOST[:PORT]; without a port 443)", strs),
   "header":D("the header its placeholder is replaced in; absent: anywhere in the request head"),"format":D("with header: the header's value once the placeholder is in it, {} standing for the value"),
   "where":{"type":"string","enum":["keyring","store"],"description":"keyring: the desktop keyring (Secret Service); store: sealed in the engine's store with a key in the owner-only config dir"},
   "createdAt":T,"rotatedAt":T},"header","format","rotatedAt"),
 "SecretInfo":always({"name":S,"hosts":strs,"header":S,"format":S,"where":{"type":"string","enum":["keyring","store"]},"createdAt":T,"rotatedAt":T,
   "env":D("the variable a sandbox finds its placeholder in (gh: GH)"),"usedBy":D("the sandboxes that ask for it", arr(always({"id":S,"name":S})))},"header","format","rotatedAt"),
 "SecretList":always({"secrets":arr(A("SecretInfo"))}),
 "SecretBody":o({"name":D("1 to 63 lower-case letters, digits, - and _, starting with a letter"),"hosts":D("HOST[:PORT] (without a port 443), *.name for subdomains; at least one", strs),
   "header":D("replace the placeholder only in this header (Authorization); absent: anywhere in the request head"),"format":D("with header: its whole value, {} for the secret ('Bearer {}')"),
   "value":D("the secret, at most 16 KiB, one line; never answered")},["name","hosts","value"],{"additionalProperties":False}),
 "SecretValueBody":o({"value":D("the new value")},["value"],{"additionalProperties":False}),
 "SecretRemoved":always({"ok":B,"removed":D("the name")}),
 "Sandbox":always({"id":S,"name":S,"kind":{"type":"string","enum":["agent","oneshot","app"],"description":"absent for a managed sandbox; agent: the agent shell's per-project sandbox; app: a Space App's"},
   "backend":D("bwrap, landlock, docker, seatbelt, windows or direct; empty: the best available at each run"),
   "engine":D("the named Docker engine of the settings it lives on, on another machine; absent: this machine's. Its workspace is then a volume there, /work in its container"),
   "image":D("the container image (container backends)"),
   "workspace":D("the host folder it may write"),"ownWorkspace":D("the workspace is the engine's own (the only kind a purge removes)", B),
   "fsMode":fsmode,"allowlist":D("the folders its allowlist mode reads instead of the settings' allowlist, when a project's policy file narrowed them", strs),"mounts":arr(A("Mount")),"network":D("the network switch: outbound through the engine's proxy", B),"ports":A("PortRules"),
   "cpus":N,"memoryMb":I,"pids":I,"diskMb":D("quota of its own workspace in MB", I),"timeoutMs":D("default timeout of its runs", I),"env":strmap,
   "secrets":D("the secrets its runs get placeholders of (names; never values)", strs),
   "traceEnabled":B,"traceAll":D("traces keep every read instead of folding the system roots", B),
   "apiAccess":D("a Space App's sandbox that may reach the engine's API with the app's own token", B),
   "tenant":D("the tenant it belongs to; absent: the owner's own"),
   "uid":D("the host uid a root engine runs its code as: its own, from the sandboxUidRange setting, which no other sandbox and no host process has; absent for an engine that is not root", {"type":"integer","minimum":1}),
   "gid":D("the host gid of the same number", {"type":"integer","minimum":1}),
   "state":{"type":"string","enum":["idle","running","error","unreachable"],"description":"unreachable: its engine on another machine does not answer (it is kept, and adopted again when the engine answers)"},
   "container":D("what a container backend keeps: running, stopped, none or needs recreate"),
   "lastError":S,"createdAt":T,"updatedAt":T,"lastUsedAt":D("when its last run started; absent until it has run", T)},
   "kind","tenant","engine","image","traceAll","apiAccess","uid","gid","container","lastError","lastUsedAt","secrets","allowlist"),
 "SandboxPage":always({"sandboxes":arr(A("Sandbox")),"total":D("sandboxes that match ?q, on every page", I),"running":D("sandboxes with a run going, of all", I)}),
 "SandboxReply":always({"sandbox":A("Sandbox"),**notes}),
 "RunPage":always({"runs":arr(A("RunRecord")),"total":D("runs that match, on every page", I)}),
 "DeleteReply":always({"ok":B,"deleted":D("the id"),"files":D("purged, or still on disk")}),
 "OkNote":always({"ok":B,"note":S}),
 "StopReply":always({"ok":B,"stopped":D("processes (or sandboxes, for stop-all) stopped", I)}),
 "RunRecord":always({"id":S,"sandboxId":S,"sandboxName":S,
   "source":{"type":"string","enum":["mcp","rest","cli","agent-shell","scheduler","code","space-app"]},
   "tenant":D("the tenant its sandbox belongs to; absent: the owner's own"),"principal":D("who asked for it: owner, agent:NAME, tenant:NAME, app:ID"),
   "kind":{"type":"string","enum":["exec","code","install","oneshot"]},"command":D("the command as given (at most 2000 characters)"),"language":S,"backend":S,
   "engine":D("the named Docker engine the run went to; absent: this machine's"),
   "isolation":D("what was really applied, measured at start: bwrap, landlock, docker, none, none (degraded), refused: <reason>"),
   "enforced":D("the limits that held, in words", strs),"missing":D("what was asked for and not enforced, in words", strs),
   "guard":D("what the shell guard matched in a run it let go on because it only warns in a sandbox (guard.sandbox warn): group: why: part", strs),
   "policy":D("what the project's policy file (.senclaw/policy.json) ignored because it would have widened the owner's policy, and what of the request it took down, one line each", strs),
   "network":D("the run could reach other hosts (the network on, or connect ports); listen and loopback ports alone leave it false", B),
   "background":B,"ttlMs":D("a background run's deadline (absent: none)", I),"timeoutMs":D("a foreground run's timeout, the one it got (absent: none)", I),"idleTtlMs":D("a background run's idle TTL (absent: none)", I),
   "terminal":D("the run had a pseudo-terminal", B),"interactive":D("a person was attached to it (senclaw shell): no deadline unless one was given", B),"agent":D("whose shell asked for an agent-shell run (claude-code, gemini-cli, shell)"),
   "state":{"type":"string","enum":["running","done"]},"exitCode":D("null when the process was killed or has not ended", {"type":["integer","null"]}),
   "timedOut":B,"truncated":D("the output was longer than kept; its start and end are kept", B),"killed":D("why the engine killed the run"),
   "durationMs":I,"stdout":D("the output's tail"),"stderr":S,"logFile":D("a background run's log on the host"),"logSize":D("a finished background run's log's size; stdout keeps the log's last bytes", I),"error":D("why the run failed to start"),
   "startedAt":T,"scheduleId":D("the schedule that fired it (source scheduler)"),
   "refusals":D("what the sandbox was refused while the run went, each with how to allow it", arr(A("Refusal"))),
   "uid":D("the host uid a root engine ran the code as (its sandbox's own); absent when it ran as the engine's own user (an engine that is not root, the documented off paths)", {"type":"integer","minimum":1}),
   "aheadId":D("when a one-shot ran in a sandbox the engine made ahead: the id it was made under, which its cgroups carry"),
   "projectDir":D("the project whose policy file (.senclaw/policy.json) bounded the run (an agent shell's sandboxed run, senclaw run --here): learn mode proposes that file's policy from such a run")},
   "command","tenant","principal","language","engine","enforced","missing","guard","policy","background","ttlMs","idleTtlMs","timeoutMs","terminal","interactive","agent","killed","logFile","logSize","error","scheduleId","uid","aheadId","refusals","projectDir"),
 "RunReply":always({"run":A("RunRecord"),"ok":D("exited 0, not timed out nor killed; a background run that started", B),
   "stdout":D("empty when streamed"),"stderr":S,**notes,"lifetime":D("a background run: how it ends"),
   "refusals":D("last: what the sandbox was refused during the run (connections, HTTP requests, secrets' placeholders sent elsewhere, Unix sockets, writes of the file API), each with how to allow it; empty when nothing was", arr(A("Refusal")))},"lifetime"),
 "RunStarted":always({"started":B,"schedule":A("Schedule")}),
 "FileEntry":always({"name":S,"path":D("relative to the workspace"),"dir":B,"size":I,"modifiedMs":I,"link":D("a symbolic link's target"),"readOnly":D("inside a read-only mount", B)},"link","readOnly"),
 "FileList":always({"entries":arr(A("FileEntry"))}),
 "FileContent":always({"path":S,"size":D("the file's size in bytes", I),"encoding":{"type":"string","enum":["utf-8","base64"]},"content":S}),
 "FileWritten":always({"ok":B,"path":S,"bytes":I}),
 "FileDeleted":always({"ok":B,"deleted":D("the path")}),
 "DirMade":always({"ok":B,"path":S}),
 "ProcessInfo":always({"pid":I,"ppid":I,"pgid":I,"command":S,"cpuPercent":D("percent of one core", N),"rssMb":N,"rssBytes":I,"elapsedSec":N}),
 "StatsPoint":always({"atMs":I,"cpuPercent":N,"rssMb":N}),
 "Stats":always({"sandboxId":S,"source":{"type":"string","enum":["host","container"],"description":"host: this machine's process sampling; container: the Docker API's stats and process list (over the link for a remote engine)"},
   "engine":D("the named engine of the container, for a remote sandbox"),"running":B,"processes":arr(A("ProcessInfo")),
   "cpuPercent":N,"rssMb":N,"memoryLimitMb":I,"sampledAtMs":I,"history":arr(A("StatsPoint")),
   "denied":D("connections the egress proxy refused since the engine started", I),"recentDenied":D("the last distinct refused hosts (up to 12, newest last)", strs),
   "note":D("sampling failed, or something is missing")},"engine","note"),
 "KillReply":always({"ok":B,"groups":D("process groups killed ({} asked for all)", I),"killed":D("the pid killed", I)},"groups","killed"),
 "MountList":always({"mounts":arr(A("Mount"))}),
 "MountResult":always({"mount":A("Mount"),"at":D("where the folder appears inside the sandbox"),**notes}),
 "UnmountReply":always({"ok":B,"unmounted":S,"realFolder":D("untouched"),"sandbox":A("Sandbox")}),
 "FsModeReply":always({"ok":B,"sandbox":A("Sandbox"),"fsMode":fsmode,"label":S,**notes}),
 "PortsResult":always({"sandbox":A("Sandbox"),"ports":A("PortRules"),"reachableAt":D("127.0.0.1:PORT for each listen port", strs),**notes}),
 "TraceReply":always({"ok":B,"sandbox":D("the id"),"tracing":{"type":"string","enum":["ON","OFF"]},"note":S}),
 "StoredEvent":always({"runId":S,"tsMs":I,"pid":I,"kind":D("file.read, file.write, proc.spawn, net.connect, net.listen, net.dns, denied or trace.truncated"),
   "target":S,"detail":S,"source":D("who observed it: strace, in-sandbox (can be tampered with), in-container hooks (can be tampered with) (a remote engine's), diff or proxy")},"detail"),
 "EventsResult":always({"traceEnabled":B,"events":arr(A("StoredEvent")),"note":D("why the answer is empty, and what to do")},"note"),
 "EventsCleared":always({"ok":B,"deleted":D("events deleted", I)}),
 "CacheInfo":always({"kind":D("project: kept in the engine's data dir for a project folder; sandbox: in a persistent sandbox's workspace",{"type":"string","enum":["project","sandbox"]}),
  "project":D("the project folder (kind project)"),"sandboxId":D("the sandbox's id (for a project, its sandbox's when it has one)"),
  "dir":D("where the caches are on this machine"),"bytes":D("the disk space they take",I),"files":I},"project","sandboxId"),
 "CacheList":always({"caches":arr(A("CacheInfo"))}),
 "CachesCleared":always({"ok":B,"cleared":D("the sandbox's id, or all")}),
 "Settings":always({
   "defaultFsMode":fsmode,"allowlist":D("folders the allowlist mode may read", strs),"defaultNetwork":B,
   "defaultCpus":{"type":"number","minimum":0.1,"maximum":32},"defaultMemoryMb":{"type":"integer","minimum":64,"maximum":65536},
   "defaultPids":{"type":"integer","minimum":16,"maximum":8192},"defaultTimeoutMs":{"type":"integer","minimum":1000,"maximum":86400000},
   "defaultDiskMb":D("the workspace quota of new sandboxes in MB", {"type":"integer","minimum":16,"maximum":1048576}),
   "allowedSockets":D("host Unix sockets every sandbox may connect to by that path; only a person may change them", strs),
   "sandboxUidRange":D("the host uids a root engine gives its sandboxes, one each: auto (the first 65536-block above every account and subordinate range of this machine) or FIRST-LAST; a change applies when the engine starts next; only a person may change it"),
   "sandboxUid":D("deprecated: each sandbox runs as a uid of its own (sandboxUidRange); names who owned the workspaces before, which the engine gave them at its first start on the new scheme", {"type":"integer","minimum":1,"deprecated":True}),"sandboxGid":{"type":"integer","minimum":1,"deprecated":True},
   "allowDirect":D("permit runs that ask for the direct backend (no isolation at all); only a person may change it", B),
   "landlockListen":D("permit listen ports in landlock sandboxes (they bind in this machine's network)", B),
   "defaultImage":D("the container image of container backends"),"notifications":D("desktop notifications", B),
   "mcpSessionIdleMinutes":{"type":"integer","minimum":1,"maximum":1440},"mcpMaxSessions":{"type":"integer","minimum":1,"maximum":1000},
   "readyIdleMinutes":D("how long a persistent sandbox stays ready after its last run (its next run's bwrap started ahead, so that the run starts as fast as a one-shot), in minutes (0: none is kept ready)", {"type":"integer","minimum":0,"maximum":1440}),
   "lanListen":D("IP:PORT of the LAN listener the desktop app and senclaw serve open at their start (as --lan): the API and /mcp over TLS to agent and tenant tokens only; empty: none; only the owner may change it, and it takes effect at the next start"),
   "mountAllow":D("host folders the owner lets sandboxes mount although the mount guard refuses them by default", strs),
   "maxSandboxes":{"type":"integer","minimum":1,"maximum":100000},
   "concurrency":D("foreground runs executing at once in all sandboxes (default 4 per core); more wait in the queue", {"type":"integer","minimum":1,"maximum":10000}),
   "queueLength":D("runs that may wait for a place (0: none wait); more are refused with 429", {"type":"integer","minimum":0,"maximum":100000}),
   "maxBackgroundRuns":D("background runs and Space App servers at once (they never wait in the queue); more are refused with 429", {"type":"integer","minimum":1,"maximum":100000}),
   "maxRunsPerSandbox":D("runs of one sandbox at once, waiting and background ones included", {"type":"integer","minimum":1,"maximum":10000}),
   "minFreeDiskMb":D("new runs are refused while the data dir's filesystem has less free space than this, in MiB (0: never)", {"type":"integer","minimum":0,"maximum":1048576}),
   "nestedProjectDepth":D("how many levels below a folder a sandbox writes (a read-write mount, an agent's project, a --here folder) the engine looks for projects whose agents' and git's files it keeps read-only (0: the folder alone)", {"type":"integer","minimum":0,"maximum":16}),
   "nestedProjectLimit":D("how many such projects it keeps read-only in one folder; past it a run there is refused with the reason", {"type":"integer","minimum":1,"maximum":4096}),
   "dockerPoolSize":D("idle Docker containers kept ready per one-shot configuration (0: none)", {"type":"integer","minimum":0,"maximum":16}),
   "pinnedCAs":D("CAs (PEM) the proxy verifies a looked-into host with instead of this machine's roots, by HOST[:PORT] (443 without one); only a person may change them", strmap),

   "engines":D("the named Docker engines sandboxes may be made on, each on another machine; one that sandboxes live on cannot be removed", arr(A("EngineSettings"), maxItems=32)),
   "guard":D("the shell guard: each deny group on or off, and what a match does in a sandbox; only a person may change it", A("GuardSettings")),
   "exec":D("what governs host exec, the Agent shell and Scheduler scripts switches' off paths; only a person may change it", A("ExecSettings"))}),
 "ExecSettings":always({"tenantHostPolicy":D("host exec for every principal but the owner, whose commands run under a Landlock domain of their own where Landlock is (isolation landlock (host exec)): deny (refused; credentialed CLIs refused on every host path too), warn (runs, with the security event security.exec_tenant_host_would_deny) or allow (runs); without Landlock warn runs an agent's unconfined and refuses a tenant's, and allow refuses a command naming a tenant's directory", {"type":"string","enum":["deny","warn","allow"]}),
   "hostTimeoutSeconds":D("the timeout of a host exec whose request gives none, and the longest a principal other than the owner gets (1 to 86400 s, default 60); the whole process tree is killed on it", {"type":"integer","minimum":1,"maximum":86400}),
   "credentialedCommands":D("programs refused on the host under tenantHostPolicy deny for every principal but the owner, besides gh, gcloud, aws, az, kubectl, terraform, psql and docker, also when wrapped (sh -c, env, nohup, timeout, xargs, sudo, nice)", {"type":"array","items":{"type":"string"}}),
   "envOverride":D("read-only: the policy SENCLAW_EXEC_TENANT_HOST_POLICY gave the engine at its start, which holds over tenantHostPolicy; absent when unset", {"type":"string","enum":["deny","warn","allow"]})},"envOverride"),
 "ExecPolicy":always({"execShell":D("the agent shell runs sandboxed (on) or directly (off)", B),"execNetwork":B,
   "execFsMode":D("what the sandboxed agent shell may read", fsmode),"execLoopback":D("this machine's ports the agent shell may call", arr(port)),
   "runPython":B,"runNode":B,"codeNetwork":B,"schedulerScript":B,"schedulerNetwork":B}),
 "RunLog":always({"runId":S,"offset":D("where data starts in the log: past the offset asked for when the bytes there were not kept", I),"size":D("the log's size now", I),"data":S,"running":D("the run goes on (the output may grow)", B),
   "kept":D("the part comes from the run's record, which keeps the last bytes of a finished run's output (a background run's log's, once its log file is gone)", B),
   "stderrAt":D("a finished foreground run, whose record keeps its streams apart: where its stderr starts in data's numbering (the bytes before are its stdout)", I)},"kept","stderrAt"),
 "KillRunReply":always({"ok":B,"killed":D("false when it had ended", B),"run":S,"message":S}),
 "AgentShellCheck":always({"execShell":B,"isolation":D("what a run would get now: none with the switch off")}),
 "GuardFinding":always({"group":D("the deny group that matched; its switch is guard.<group>", guard_group),
   "part":D("the part of the command that matched, escaped for a terminal"),"why":D("what the part does, in words"),
   "advice":D("how to do it another way, or how to switch the group off")}),
 "GuardReport":always({"verdict":D("deny: the run would be refused; warn: it would run with the match on its record; pass", {"type":"string","enum":["pass","warn","deny"]}),
   "path":guard_path,"mode":D("what a match does on the path: deny on the host; guard.sandbox in a sandbox", guard_mode),
   "findings":arr(A("GuardFinding")),"off":D("the groups switched off, which were not checked", arr(guard_group))}),
 "PolicyApplyRequest":o({"projectDir":D("the project whose .senclaw/policy.json is written"),"policy":D("the policy file's text (JSON)")},["projectDir","policy"],{"additionalProperties":False}),
 "PolicyLearnRequest":o({"projectDir":D("the project the command runs in and whose .senclaw/policy.json the proposal is for"),
   "command":D("a shell command line"),"argv":D("an exact argument vector, in place of command", strs),
   "timeoutMs":D("kill the learn run after this many milliseconds", I),"backend":D("the backend of the learn run; absent: the best available"),"write":D("save the proposal as the project's policy file (only after a run that succeeded)", B)},["projectDir"],{"additionalProperties":False}),
 "PolicyLearn":always({"run":A("RunRecord"),"stdout":S,"stderr":S,"file":D("the project's policy file"),"proposal":D("the proposed file, as it would be written"),
   "diff":D("the proposal against the file as it is, one key a line: - key: old, + key: new", strs),
   "notes":D("what it could not propose (it would need the owner to allow it), what it measured (memory) and what it did not", strs),
   "written":D("the proposal was saved into file", B)}),
 "PolicyCheckRequest":o({"projectDir":D("the project whose .senclaw/policy.json narrows the owner's policy; absent: the owner's alone"),
   "agentShell":D("judge the command as the agent shell would run it in the project; else as senclaw run --here would", B),
   "command":D("a shell command line"),"argv":D("an exact argument vector, in place of command", strs)},None,{"additionalProperties":False}),
 "PolicyCheck":always({"owner":D("the owner's policy file"),"project":D("the project's policy file; absent: it has none"),
   "values":D("the effective policy, key by key, each with the file that decided it", arr(always({"key":S,"value":{"description":"the value: a string, number, boolean or list; null for env and secrets when any name may be given"},"source":D("the file that decided it")}))),
   "notes":D("the project's keys that were ignored (they would widen the owner's policy) and what the policy takes down of the run", strs),
   "allowed":D("the run would start", B),"refusal":D("why it would be refused"),"isolation":D("what it would get: bwrap, landlock, docker, none"),
   "brokenFile":D("a policy file that cannot be read as a policy; the run would be refused with it", always({"file":S,"line":I,"column":I,"message":S}))},
   "project","refusal","isolation","brokenFile"),
 "GuardCheckBody":o({"command":D("a shell command line, as /bin/sh -c would get it"),"argv":D("an exact argument vector, in place of command", strs),
   "path":D("host (the default) or sandbox", guard_path),"cwd":D("where relative paths resolve; the user's home when empty")},None,{"additionalProperties":False}),
 "GuardSettings":always({**{g:D("the shell guard's "+g+" group: on, a match refuses (on the host) or warns (in a sandbox)", B) for g in guard_groups},
   "sandbox":D("what a match does inside a sandbox: warn (the run goes on, its record says what matched), deny or off; on the host a match always refuses", guard_mode)}),
 "Integration":always({"agent":{"type":"string","enum":["claude-code","gemini-cli","shell"]},"scope":{"type":"string","enum":["user","project"]},
   "path":S,"project":S,"installed":B,"command":D("the hook's command as installed"),"problem":D("why the state could not be read")},"project","command","problem"),
 "IntegrationList":always({"integrations":arr(A("Integration"))}),
 "LoginCode":o({"code":D("without ?page=1"),"path":D("without ?page=1: open path + code in a browser within 60 seconds"),"file":D("with ?page=1: the login page to open in a browser (its path holds no secret); it is removed once used or expired")}),
 "DaemonStopReply":always({"ok":B,"stopping":B}),
 "SandboxConfig":o({
   "name":{"type":"string","minLength":1,"maxLength":100},"backend":D("bwrap, landlock, docker, direct or auto"),
   "engine":D("on create only: a named Docker engine of the settings to make the sandbox on (local or absent: this machine's); its runs, files and listen ports then go over the Docker API to that machine, its egress through this machine's proxy"),
   "image":S,"fsMode":fsmode,
   "mounts":arr(A("MountBody"), maxItems=32),"network":B,"listenPorts":ports_in(1024),"connectPorts":ports_in(),"loopbackPorts":ports_in(),
   "domains":strs,"denyDomains":strs,
   "cpus":{"type":"number","minimum":0.1,"maximum":32},"memoryMb":{"type":"integer","minimum":64,"maximum":65536},
   "pids":{"type":"integer","minimum":16,"maximum":8192},"diskMb":{"type":"integer","minimum":16,"maximum":1048576},
   "timeoutMs":{"type":"integer","minimum":1000,"maximum":86400000},"env":strmap,
   "allowHttp":D("replaces the HTTP rules (see PortRules)", arr(A("HTTPRule"), maxItems=64)),
   "secrets":D("replaces the secrets its runs get placeholders of, by name (sbx_capabilities and GET /secrets list them)", arr(S, maxItems=16)),
   "projectDir":D("on create: a folder of the caller's as the writable workspace (never purged, no quota), checked as a read-write mount")},
   None,{"additionalProperties":False}),
 "RunBody":o({"command":D("a shell line"),"argv":strs,"language":{"type":"string","enum":["python","node","bash"]},"code":S,
   "timeoutMs":D("a foreground run's timeout (default: its sandbox's, 60 s unless the settings say otherwise; up to 24 h)", {"type":"integer","minimum":1000,"maximum":86400000}),"env":strmap,
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
 "PortsBody":o({"listen":ports_in(1024),"connect":ports_in(),"loopback":ports_in(),"domains":D("absent with denyDomains and allowHttp: all three kept", strs),"denyDomains":strs,
   "allowHttp":D("replaces the HTTP rules; absent: kept", arr(A("HTTPRule"), maxItems=64))},None,{"additionalProperties":False}),
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
   "timeoutMs":{"type":"integer","minimum":1000,"maximum":86400000,"description":"default 600000"},
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
   "tenant":D("the owning tenant's slug; empty: the owner's own"),"by":D("who last gave it what it runs: owner, agent:NAME, tenant:NAME (empty: the owner); with Scheduler scripts off only the owner's run"),"nextRun":D("null when paused", {"type":["string","null"],"format":"date-time"}),
   "running":B,"lastRun":{"oneOf":[A("Firing"),{"type":"null"}]},"createdAt":T,"updatedAt":T},"code"),
 "ScheduleList":always({"schedules":arr(A("Schedule"))}),
 "ScheduleReply":always({"schedule":A("Schedule"),"note":D("what the exec policy will do to its runs")},"note"),
 "ScheduleHistory":always({"history":arr(A("Firing"))}),
 "ScheduleDeleted":always({"ok":B,"deleted":D("the id")}),
}
schemas["MountBody"] = o({"source":D("an absolute host folder"),"target":D("where it appears, relative to the workspace (default: the folder's name)"),"readOnly":B,
   "copy":D("on a remote engine, copy the folder into the sandbox once instead of binding it (a folder of this machine cannot be bound on another machine); refused on this machine's engine", B)},["source"],{"additionalProperties":False})
# Request bodies other than the table's (a request's Mount may leave out
# what the answer's always has).
schemas["ExecBody"] = json.loads(json.dumps(schemas["RunBody"]))
schemas["ExecBody"]["properties"]["terminal"] = schemas["AgentShellBody"]["properties"]["terminal"]
schemas["ExecBody"]["properties"]["interactive"] = D("attached runs only: a person is at it (senclaw shell); no deadline unless timeoutMs, and the record says interactive", B)
request_schema = {("POST","/sandboxes/{id}/mounts"):"MountBody"}
# The run routes' ?stream=1: NDJSON, one object a line.
stream_line = {"oneOf":[always({"stdout":S}),always({"stderr":S}),always({"result":A("RunReply")}),always({"error":A("Error")})],
  "description":"one line of ?stream=1: {stdout} and {stderr} chunks as the run writes them, then {result: RunReply} (stdout and stderr empty: already streamed) or {error: Error}"}
log_line = {"oneOf":[always({"data":S,"stream":D("stderr: a finished foreground run's stderr, which its record keeps apart", {"type":"string","enum":["stderr"]})},"stream"),always({"skipped":D("this many bytes before what comes next were not kept", I)}),always({"end":A("RunRecord")}),always({"error":A("Error")})],
  "description":"one line of ?follow=1: {data} as the log grows, {skipped} where bytes were not kept, {end: RunRecord} when the run is over, or {error}"}
schemas["StreamLine"] = stream_line
schemas["LogLine"] = log_line

def param(name, schema, desc=None, required=False):
    p = {"name":name,"in":"query","schema":schema}
    if desc: p["description"]=desc
    if required: p["required"]=True
    return p
page_params=[param("limit",{"type":"integer","minimum":1,"maximum":100000},"items per page"),param("offset",{"type":"integer","minimum":0,"maximum":100000}),
  param("q",{"type":"string","maxLength":200},"keep the items that contain it, ignoring case")]
tenant_param = param("tenant",S,"the owner's lists: only this tenant's (its name), - for the owner's own, * or absent for every tenant's; anyone else sees its own tenant's whatever it asks")
stream_param = param("stream",B,"answer NDJSON lines as the run goes (StreamLine)")
queries = {
 ("GET","/caps"):[param("refresh",B,"probe again instead of using results up to 20 s old")],
 ("GET","/sandboxes"):page_params+[tenant_param], ("GET","/schedules"):[tenant_param],
 ("DELETE","/tenants/{id}"):[param("purge",B,"also remove its directory")],
 ("DELETE","/sandboxes/{id}"):[param("purge",B,"also remove its own workspace (never a project dir)")],
 ("POST","/sandboxes/{id}/exec"):[stream_param], ("POST","/sandboxes/{id}/run"):[stream_param], ("POST","/sandboxes/{id}/install"):[stream_param],
 ("POST","/run-once"):[stream_param], ("POST","/agent-shell"):[stream_param],
 ("GET","/sandboxes/{id}/files"):[param("path",S,"a folder, relative to the workspace (default: the workspace)")],
 ("GET","/sandboxes/{id}/file"):[param("path",S,required=True),param("encoding",{"type":"string","enum":["utf-8","base64"]}),
   param("limit",{"type":"integer","minimum":1,"maximum":2097152,"default":2097152},"bytes"),
   param("raw",B,"answer the whole file as the body (application/octet-stream), with no size cap")],
 ("PUT","/sandboxes/{id}/file"):[param("raw",B,"the body is the file itself (application/octet-stream), streamed with no size cap but the disk quota"),
   param("path",S,"with raw: the file, relative to the workspace")],
 ("DELETE","/sandboxes/{id}/file"):[param("path",S,required=True)],
 ("GET","/sandboxes/{id}/events"):[param("runId",S),param("kind",S,"a kind or its prefix: file, proc, net, denied, trace"),param("limit",{"type":"integer","minimum":1,"maximum":5000,"default":500})],
 ("GET","/runs"):[{**page_params[0],"schema":{"type":"integer","minimum":1,"maximum":5000,"default":50}},page_params[1],page_params[2],
   param("sandboxId",S),param("source",{"type":"string","enum":["mcp","rest","cli","agent-shell","scheduler","code","space-app"]}),
   param("refused",B,"only the runs that were refused (nothing ran)"),
   param("state",{"type":"string","enum":["running"]},"running: the background runs going on now (no paging)"),tenant_param],
 ("GET","/security-events"):[param("limit",{"type":"integer","minimum":1,"maximum":1000,"default":50}),param("before",S,"an event's id: the events older than it"),
   param("principal",S,"owner, agent:NAME, tenant:NAME, app:ID, or a kind and a colon (agent:)"),param("kind",S,"a kind or its prefix (security.tool)"),
   param("tenant",S,"a tenant's slug; - for the owner's own"),param("follow",B,"answer NDJSON lines: the page oldest first, then each event as it is recorded")],
 ("GET","/runs/{id}/log"):[param("offset",I,"bytes; negative: from the end"),param("limit",{"type":"integer","minimum":1,"maximum":1048576,"default":131072},"bytes"),
   param("follow",B,"answer NDJSON lines as the log grows (LogLine)")],
 ("POST","/schedules/{id}/run"):[param("wait",B,"answer with the run when it ends")],
 ("POST","/login-codes"):[param("page",{"type":"string","enum":["1"]},"write the code into an owner-only login page and answer its path")],
 ("GET","/schedules/{id}/history"):[param("limit",{"type":"integer","minimum":1,"maximum":100,"default":50})],
}
# Successes other than 200 with the route's answer.
created = {("POST","/sandboxes"),("POST","/schedules"),("POST","/tokens"),("POST","/tenants"),("POST","/secrets")}
background = {("POST","/sandboxes/{id}/exec"),("POST","/sandboxes/{id}/run"),("POST","/run-once")}
streams = {("POST","/sandboxes/{id}/exec"),("POST","/sandboxes/{id}/run"),("POST","/sandboxes/{id}/install"),("POST","/run-once"),("POST","/agent-shell")}
# Routes that can meet one of the engine's bounds (maxSandboxes; for
# runs: the queue's length, maxBackgroundRuns, maxRunsPerSandbox): 429.
bounded={("POST","/sandboxes"),("POST","/agent-shell"),("POST","/tokens"),
  ("POST","/sandboxes/{id}/exec"),("POST","/sandboxes/{id}/run"),("POST","/sandboxes/{id}/install"),("POST","/run-once")}
# Routes that answer 409: a sandbox name more than one has, a state that
# forbids the change.
conflicts={("PUT","/autostart"),("POST","/schedules/{id}/run"),("POST","/login-codes"),("POST","/tokens"),("POST","/tenants")}
ERR = {"$ref":"#/components/responses/Error"}

def json_content(schema): return {"application/json":{"schema":schema}}

# The scope each operation needs, from the one table (app/principal).
scope_table = json.load(open(os.path.join(os.path.dirname(__file__), "..", "app", "principal", "table.json")))
def scoped(op, key):
    """Marks op with the scope and the tool of the table's row key."""
    row = scope_table["routes"][key]
    op["x-senclaw-scope"] = row["scope"]
    if row.get("tool"): op["x-senclaw-tool"] = row["tool"]
    if row["scope"] != "public": op["security"] = [{"bearer":[row["scope"]]}]
    return op

def operation(m, p, summary, req, resp, op_id, params, extra_errors=()):
    ok = {"description":"OK","content":json_content(A(resp) if resp else {"type":"object"})}
    op = {"operationId":op_id,"summary":summary,"responses":{}}
    errors = {"401","403","500","503"} | set(extra_errors)
    if req or params: errors.add("400")
    if "{id}" in p or "{name}" in p: errors.add("404")
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
    if "{name}" in p:
        params.append({"name":"name","in":"path","required":True,"schema":{"type":"string"},"description":"the secret's name"})
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
    if key == ("GET","/sandboxes/{id}/file"):
        op["responses"]["200"]["content"]["application/octet-stream"] = {"schema":{"type":"string","format":"binary","description":"with ?raw=1: the whole file"}}
    if key == ("PUT","/sandboxes/{id}/file"):
        op["requestBody"]["content"]["application/octet-stream"] = {"schema":{"type":"string","format":"binary","description":"with ?raw=1: the file itself"}}
    if key == ("GET","/security-events"):
        op["responses"]["200"]["content"]["application/x-ndjson"] = {"schema":{"type":"string","description":"NDJSON (with ?follow=1): each line a SecurityEvent"},"x-ndjson-line":A("SecurityEvent")}
    if key == ("GET","/runs/{id}/log"):
        op["responses"]["200"]["content"]["application/x-ndjson"] = {"schema":{"type":"string","description":"NDJSON (with ?follow=1): each line a LogLine"},"x-ndjson-line":A("LogLine")}
    if key == ("POST","/schedules/{id}/run"):
        op["responses"]["202"] = {"description":"Accepted: the run started (without ?wait)","content":json_content(A("RunStarted"))}
    if key == ("POST","/sandboxes/{id}/install") or key == ("POST","/schedules/{id}/run"):
        pass
    paths.setdefault("/api/sandbox"+p,{})[m.lower()]=scoped(op, m+" /api/sandbox"+p)
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
("PUT","/{id}/sandbox","Change the sandbox configuration (fields left out keep their values; lists given replace). hosts and allowHttp apply to the running app at once; readMode, folders, network, loopback, backend, image, enabled and daemonApi from its next launch. The reply says which is which and whether it now needs a restart. Disabling a forced sandbox is 409 with the reason.","SandboxPatch","AppSandboxReply"),
("GET","/{id}/isolation","The effective isolation: what the running process got (or a launch would), its limits, and in words what is and is not enforced.",None,"AppIsolation"),
]
# Space Apps: /api/space/apps/, app/spaceapps. Every field of
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
  "allowHttp":{"type":"array","maxItems":64,"items":A("HTTPRule"),"description":"the hosts mode's HTTP rules: for a rule's host only the requests whose method and path a rule allows get through (applies to the running app at once)"},
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
  "tenant":{"type":"string","description":"the tenant it belongs to; absent: the owner's own"},
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
 "AppSandboxSummary":always({"enabled":B,"forced":B,"disabledBy":{"type":"string","enum":["manifest","owner"],"description":"who turned the sandbox off, when it is: its manifest (sandbox.enabled false), or a person since"},"isolation":{"type":"string","description":"what the running process actually got (bwrap, docker, none, ...); empty when it does not run"},"backend":S,"readMode":S,"network":S,"hostCount":I,"denied":I,"recentDenied":arr(S),"allowed":I},"disabledBy"),
 "AppView":always(app_view,"tenant","nextAttemptAtMs","portHolder"),
 "AppOverview":always({"apps":I,"running":I,"sandboxed":I,"unsandboxed":I,"needsRestart":I,"crashLooping":I,"denied":I,"isolation":S}),
 "AppList":always({"apps":arr(A("AppView")),"overview":A("AppOverview")}),
 "Manifest":{"type":"object","description":"senclaw-app.json; its JSON schema is app/spaceapps/senclaw-app.schema.json"},
 "AppDetail":always({**app_view,"manifest":A("Manifest"),"source":{"type":"string","description":"a folder, or zip upload"},"registeredAtMs":I,"env":strmap},"tenant","nextAttemptAtMs","portHolder"),
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
    if m == "GET" and p == "":
        params.append(tenant_param)
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
    paths.setdefault("/api/space/apps"+p,{})[m.lower()]=scoped(op, m+" /api/space/apps"+p)

# The routes outside the two APIs: the document itself, the dashboard's
# login and page, and MCP.
html = {"text/html":{"schema":{"type":"string"}}}
paths["/api/sandbox/openapi.json"] = {"get":{"operationId":"getOpenAPI","summary":"This document.","security":[],
  "responses":{"200":{"description":"OK","content":json_content({"type":"object"})},"401":ERR,"403":ERR}}}
paths["/login"] = {"get":{"operationId":"login","summary":"Redeem a one-time code of POST /login-codes (senclaw url): a session cookie (HttpOnly, SameSite=Strict) and a redirect to the dashboard.","security":[],
  "parameters":[param("code",S,required=True)],
  "responses":{"303":{"description":"See Other: to /, with the session cookie","headers":{"Set-Cookie":{"schema":S},"Location":{"schema":S}}},
    "401":{"description":"the code is not valid (any more): a page that says so","content":html},"403":ERR}},
  "post":{"operationId":"loginPosted","summary":"Redeem a one-time code posted by a login page (senclaw open; its Origin is null, accepted on this route alone): a session cookie and a page that moves to the dashboard.","security":[],
  "requestBody":{"required":True,"content":{"application/x-www-form-urlencoded":{"schema":{"type":"object","properties":{"code":S},"required":["code"]}}}},
  "responses":{"200":{"description":"the session cookie, and a page that opens the dashboard","headers":{"Set-Cookie":{"schema":S}},"content":html},
    "401":{"description":"the code is not valid (any more): a page that says so","content":html},"403":ERR}}}
paths["/health"] = {"get":{"operationId":"getPublicHealth","summary":"Up or down, for a monitor or a script that has no token: {ok: true}, or 503 {ok: false} when the engine could not start (why is for /api/sandbox/health, with the token). The Host check still applies.","security":[],
  "responses":{"200":{"description":"the engine runs","content":json_content(A("PublicHealth"))},"503":{"description":"the engine could not start","content":json_content(A("PublicHealth"))},"403":ERR}}}
schemas["PublicHealth"] = always({"ok":B})
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
     "429":{"description":"this token holds mcpMaxSessions sessions already, every one busy with a request (at the bound a new session otherwise closes the least recently used idle one): close one (DELETE /mcp) or wait","content":json_content(A("Error"))}}},
 "get":{"operationId":"mcpStream","summary":"Open the session's SSE stream of server messages.","parameters":[{"name":"Mcp-Session-Id","in":"header","required":True,"schema":S}],
   "responses":{"200":{"description":"an SSE stream","content":{"text/event-stream":{"schema":{"type":"string"}}}},"400":mcp_err,"401":mcp_err,"403":mcp_err,"404":mcp_err,"405":mcp_err}},
 "delete":{"operationId":"mcpClose","summary":"Close the session.","parameters":[{"name":"Mcp-Session-Id","in":"header","required":True,"schema":S}],
   "responses":{"200":{"description":"closed"},"204":{"description":"closed"},"400":mcp_err,"401":mcp_err,"403":mcp_err,"404":mcp_err}},
}

for path, ops in (("/api/sandbox/openapi.json",("get",)),("/mcp",("post","get","delete")),("/login",("get","post")),("/",("get",))):
    for m in ops: scoped(paths[path][m], m.upper()+" "+path)
ids = [op["operationId"] for ops in paths.values() for op in ops.values()]
assert len(ids) == len(set(ids)), "duplicate operationIds"
doc = {"openapi":"3.1.0",
  "info":{"title":"SenClaw Sandbox API","version":"1",
    "description":"The engine's REST API: sandboxes under /api/sandbox/, Space Apps under /api/space/apps/, and MCP at /mcp. Over the Unix socket ($XDG_RUNTIME_DIR/senclaw/api.sock, mode 0600) no token is needed; over TCP (127.0.0.1 only) send Authorization: Bearer <token from $XDG_CONFIG_HOME/senclaw/api-token>, and Host must be the loopback address (no DNS rebinding), Origin absent or this server's. Every request is made by a principal (the owner: the socket without a token, the owner token, the dashboard session; an agent or a tenant: a token of senclaw tokens add or tenants add; an app: a Space App's own token), and every operation needs the scope its x-senclaw-scope names (also in its security requirement); only the owner holds the scopes that change what the engine enforces (settings:write, policy:write, schedules:host, apps:unsandboxed, tokens:admin, tenants:admin, security:read, daemon:admin). x-senclaw-tool is the tool (or operation group) a tool policy names the operation by. Another tenant's ids answer 404. Errors are {error, field?, scope?, tool?}: 400 bad input (the field named), 401 no or wrong token, 403 refused (a scope the principal does not hold, or its tool policy: scope or tool named; policy, missing isolation, or a foreign Host or Origin), 404 unknown id, 409 a state that forbids it, 429 past one of the engine's bounds (the setting named in field), 500 the engine failed, 503 the engine could not start (its store did not open; the reason says why), or a sandbox's engine on another machine does not answer. Streams are NDJSON (application/x-ndjson): one JSON object a line, described in x-ndjson-line.",
    "license":{"name":"No license chosen yet: all rights reserved by the copyright holders until one is published with the source"}},
  "servers":[{"url":"http://127.0.0.1:7878","description":"the daemon's default TCP listener (senclaw serve --listen ADDR; the dashboard's origin). The same API is served on the owner's Unix socket $XDG_RUNTIME_DIR/senclaw/api.sock without a token."}],
  "components":{"securitySchemes":{"bearer":{"type":"http","scheme":"bearer","description":"the token in $XDG_CONFIG_HOME/senclaw/api-token, or the dashboard's page token with its session cookie"}},
    "schemas":schemas,"responses":{"Error":{"description":"An error: what was refused, why, what to do","content":json_content(A("Error"))}}},
  "security":[{"bearer":[]}],"paths":paths}
import sys
out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "app", "api", "openapi.json")
open(out,"w").write(json.dumps(doc,indent=1)+"\n")
