package direct

// ReaperArg, as the first argument of this program, makes it the child
// subreaper of a direct run (see Options.Reaper): main then calls
// RunReaper with the arguments after it.
const ReaperArg = "__senclaw-direct-reaper"
