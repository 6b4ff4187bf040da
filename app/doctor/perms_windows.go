package doctor

// checkDataDir: Windows keeps the data dir in the user's profile, whose
// access lists the installer sets; there is nothing of modes to check.
func (d *Doctor) checkDataDir() []Check { return nil }

// checkSandboxUser: sandboxed code runs as the engine's own user here.
func (d *Doctor) checkSandboxUser() []Check { return nil }
