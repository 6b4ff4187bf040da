import json
routes = [
("GET","/status","Engine status: isolation state, version, uptime, sandbox counts.",None,"Status"),
("GET","/health","Liveness: {ok: true}.",None,None),
("GET","/caps","Capabilities: each backend's probe state, version, reason and what it enforces; ?refresh=1 probes again.",None,"Capabilities"),
("GET","/languages","Code languages for runs.",None,None),
("GET","/fs-modes","The fs modes with labels and descriptions.",None,None),
("GET","/sandboxes","List sandboxes, most recently used first.",None,None),
("POST","/sandboxes","Create a sandbox. Invalid fields are refused with the field named; nothing is stored.","SandboxConfig","SandboxReply"),
("GET","/sandboxes/{id}","One sandbox with its live state.",None,"Sandbox"),
("PATCH","/sandboxes/{id}","Change a sandbox; the same checks as on create.","SandboxConfig","SandboxReply"),
("DELETE","/sandboxes/{id}","Delete a sandbox; ?purge=true also removes its own workspace (never a project dir).",None,None),
("POST","/sandboxes/{id}/start","Start what the sandbox keeps (a container); nothing to start for bwrap.",None,None),
("POST","/sandboxes/{id}/stop","Kill every process of the sandbox (and stop its container).",None,None),
("POST","/sandboxes/{id}/recreate","Recreate the sandbox's container from its saved settings; files are kept.",None,None),
("POST","/sandboxes/{id}/exec","Run a command (command: shell line, or argv). ?stream=1 streams NDJSON output.","RunBody","RunReply"),
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
("GET","/runs","Recent runs, newest first (?sandboxId, ?limit 1-5000, default 50); ?state=running lists the background runs going on now.",None,None),
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
 "RunRecord":{"type":"object","properties":{"id":{"type":"string"},"sandboxId":{"type":"string"},"source":{"type":"string"},"kind":{"type":"string"},"command":{"type":"string"},"isolation":{"type":"string","description":"what was really applied: bwrap, landlock, docker, none, none (degraded), refused: <reason>"},"exitCode":{"type":["integer","null"]},"timedOut":{"type":"boolean"},"truncated":{"type":"boolean"},"durationMs":{"type":"integer"}}},
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
 "AutostartBody":{"type":"object","required":["enabled"],"additionalProperties":False,"properties":{"enabled":{"type":"boolean"}}},
}
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
    if params: op["parameters"]=params
    paths.setdefault("/api/sandbox"+p,{})[m.lower()]=op
paths["/api/sandbox/agent-shell"]["post"]["responses"]["101"]={"description":"Switching Protocols to senclaw-attach/1 (asked for with Connection: Upgrade, Upgrade: senclaw-attach/1; the same token, Host and Origin checks as any request come first). Then both sides send frames: a type byte, a big-endian uint32 length, the payload (at most 1 MiB). Client: '0' stdin bytes, 'e' stdin ended, 'c' control JSON {cols, rows} or {signal: INT|TERM|HUP|QUIT}. Server: '1' stdout, '2' stderr (a terminal's output as the stream of its first output descriptor), 's' the run's record once started (JSON), and last 'r' {result: RunReply} or {error: Error}. Closing the connection kills the run."}
doc = {"openapi":"3.1.0","info":{"title":"SenClaw Sandbox API","version":"1","description":"The engine's REST API. Over the Unix socket ($XDG_RUNTIME_DIR/senclaw/api.sock, mode 0600) no token is needed; over TCP (127.0.0.1) send Authorization: Bearer <token from $XDG_CONFIG_HOME/senclaw/api-token>. Errors are {error, field?}. The MCP tools are served by the same daemon at /mcp (MCP Streamable HTTP transport, same authentication)."},
  "components":{"securitySchemes":{"bearer":{"type":"http","scheme":"bearer"}},"schemas":schemas,"responses":{"Error":{"description":"An error: what was refused, why, what to do","content":{"application/json":{"schema":{"$ref":"#/components/schemas/Error"}}}}}},
  "security":[{"bearer":[]}],"paths":paths}
open(__import__("os").path.join(__import__("os").path.dirname(__file__), "..", "app", "api", "openapi.json"),"w").write(json.dumps(doc,indent=1)+"\n")
