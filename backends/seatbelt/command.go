package seatbelt

// Executable is sandbox-exec, by its absolute path: a PATH lookup could
// find another program of that name.
const Executable = "/usr/bin/sandbox-exec"

// Command is the command line that runs argv under the profile: the
// profile text, then each parameter as -D KEY=VALUE, then argv after
// "--". Values are separate arguments, never shell words.
func Command(text string, params []Param, argv []string) []string {
	a := []string{Executable, "-p", text}
	for _, p := range params {
		a = append(a, "-D", p.Key+"="+p.Value)
	}
	a = append(a, "--")
	return append(a, argv...)
}
