package direct

import "github.com/senclaw/sandbox/backends/reexec"

// ReaperArg, as the first argument of the engine's executable, makes it
// the child subreaper of a direct run (see Options.Reaper): its name in
// the reexec table, which calls RunReaper with the arguments after it.
const ReaperArg = "__senclaw-direct-reaper"

func init() { reexec.Register(ReaperArg, RunReaper) }
