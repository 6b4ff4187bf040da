package doctor

import "os"

// checkDataDir: Windows keeps the data dir in the user's profile, whose
// access lists the installer sets; there is nothing of modes to check.
func (d *Doctor) checkDataDir() []Check { return nil }

// checkSandboxUser: sandboxed code runs as the engine's own user here.
func (d *Doctor) checkSandboxUser() []Check { return nil }

// checkConfigDir: as checkDataDir, the profile's access lists guard it.
func (d *Doctor) checkConfigDir() []Check { return nil }

func ownerOf(os.FileInfo) int { return -1 }
