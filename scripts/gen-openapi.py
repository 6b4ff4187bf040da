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
("GET","/runs","Recent runs, newest first: one page (?limit 1-5000, default 50, ?offset) of those of ?sandboxId matching ?q (command, language, sandbox, source, isolation), with the total that match.",None,"RunPage"),
("GET","/runs/{id}","One run record.",None,"RunRecord"),
("POST","/run-once","Run in a throwaway sandbox (its config fields may be given too); removed afterwards, its record kept.","RunBody","RunReply"),
("POST","/agent-shell","Run an agent's shell command under the exec policy ({projectDir, command, timeoutMs, env}).","AgentShellBody","RunReply"),
("POST","/stop-all","Stop every sandbox.",None,None),
("POST","/login-codes","A one-time code for a browser login (GET /login?code=...).",None,None),
("POST","/daemon/stop","Stop the daemon gracefully.",None,None),
]
obj = {"type":"object"}
schemas = {
 "Error":{"type":"object","required":["error"],"properties":{"error":{"type":"string","description":"what was refused, why, and what to do"},"field":{"type":"string","description":"the bad input's field"},"refused":{"type":"boolean","description":"a run refused by policy or missing isolation"},"run":{"$ref":"#/components/schemas/RunRecord"}}},
 "SandboxConfig":{"type":"object","additionalProperties":False,"properties":{
   "name":{"type":"string"},"backend":{"type":"string","description":"bwrap, docker, direct or auto"},"image":{"type":"string"},
   "fsMode":{"type":"string","enum":["strict","allowlist","open"]},
   "mounts":{"type":"array","items":{"$ref":"#/components/schemas/Mount"}},"network":{"type":"boolean"},
   "listenPorts":{"type":"array","items":{"type":"integer","minimum":1024,"maximum":65535},"maxItems":16},
   "connectPorts":{"type":"array","items":{"type":"integer","minimum":1,"maximum":65535},"maxItems":16},
   "loopbackPorts":{"type":"array","items":{"type":"integer","minimum":1,"maximum":65535},"maxItems":16},
   "cpus":{"type":"number","minimum":0.1,"maximum":32},"memoryMb":{"type":"integer","minimum":64,"maximum":65536},
   "pids":{"type":"integer","minimum":16,"maximum":8192},"diskMb":{"type":"integer","minimum":16},
   "timeoutMs":{"type":"integer","minimum":1000,"maximum":600000},"env":{"type":"object","additionalProperties":{"type":"string"}}}},
 "Mount":{"type":"object","required":["source"],"properties":{"source":{"type":"string"},"target":{"type":"string"},"readOnly":{"type":"boolean"}}},
 "Sandbox":obj,"SandboxReply":{"type":"object","properties":{"sandbox":{"$ref":"#/components/schemas/Sandbox"},"note":{"type":"string"}}},
 "RunBody":{"type":"object","properties":{"command":{"type":"string"},"argv":{"type":"array","items":{"type":"string"}},"language":{"type":"string","enum":["python","node","bash"]},"code":{"type":"string"},"timeoutMs":{"type":"integer","minimum":1000,"maximum":600000},"env":{"type":"object","additionalProperties":{"type":"string"}},"background":{"type":"boolean"}}},
 "RunRecord":{"type":"object","properties":{"id":{"type":"string"},"sandboxId":{"type":"string"},"source":{"type":"string"},"kind":{"type":"string"},"command":{"type":"string"},"isolation":{"type":"string","description":"what was really applied: bwrap, docker, none, none (degraded), refused: <reason>"},"exitCode":{"type":["integer","null"]},"timedOut":{"type":"boolean"},"truncated":{"type":"boolean"},"durationMs":{"type":"integer"}}},
 "RunReply":{"type":"object","properties":{"run":{"$ref":"#/components/schemas/RunRecord"},"ok":{"type":"boolean"},"stdout":{"type":"string"},"stderr":{"type":"string"},"note":{"type":"string"}}},
 "InstallBody":{"type":"object","properties":{"manager":{"type":"string","enum":["pip","npm"]},"packages":{"type":"array","items":{"type":"string"}},"timeoutMs":{"type":"integer"}}},
 "FileBody":{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"},"encoding":{"type":"string","enum":["utf-8","base64"]}}},
 "FileContent":{"type":"object","properties":{"path":{"type":"string"},"size":{"type":"integer"},"encoding":{"type":"string"},"content":{"type":"string"}}},
 "PathBody":{"type":"object","properties":{"path":{"type":"string"}}},
 "TargetBody":{"type":"object","properties":{"target":{"type":"string"}}},
 "KillBody":{"type":"object","properties":{"pid":{"type":"integer"}}},
 "FsModeBody":{"type":"object","properties":{"fsMode":{"type":"string","enum":["strict","allowlist","open"]}}},
 "PortsBody":{"type":"object","properties":{"listen":{"type":"array","items":{"type":"integer"}},"connect":{"type":"array","items":{"type":"integer"}},"loopback":{"type":"array","items":{"type":"integer"}}}},
 "TraceBody":{"type":"object","properties":{"enabled":{"type":"boolean"}}},
 "AgentShellBody":{"type":"object","properties":{"projectDir":{"type":"string"},"command":{"type":"string"},"timeoutMs":{"type":"integer"},"env":{"type":"object","additionalProperties":{"type":"string"}}}},
 "Stats":obj,"Settings":obj,"ExecPolicy":{"type":"object","properties":{k:{"type":"boolean"} for k in ["execShell","execNetwork","runPython","runNode","codeNetwork","schedulerScript","schedulerNetwork"]}},
 "Capabilities":obj,"Status":obj,
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
doc = {"openapi":"3.1.0","info":{"title":"SenClaw Sandbox API","version":"1","description":"The engine's REST API. Over the Unix socket ($XDG_RUNTIME_DIR/senclaw/api.sock, mode 0600) no token is needed; over TCP (127.0.0.1) send Authorization: Bearer <token from $XDG_CONFIG_HOME/senclaw/api-token>. Errors are {error, field?}."},
  "components":{"securitySchemes":{"bearer":{"type":"http","scheme":"bearer"}},"schemas":schemas,"responses":{"Error":{"description":"An error: what was refused, why, what to do","content":{"application/json":{"schema":{"$ref":"#/components/schemas/Error"}}}}}},
  "security":[{"bearer":[]}],"paths":paths}
open(__import__("os").path.join(__import__("os").path.dirname(__file__), "..", "app", "api", "openapi.json"),"w").write(json.dumps(doc,indent=1)+"\n")
