package api

import "github.com/senclaw/sandbox/app/apitype"

// The API's replies are apitype's, which its clients share.
type (
	DaemonInfo    = apitype.DaemonInfo
	Status        = apitype.Status
	LANInfo       = apitype.LANInfo
	Whoami        = apitype.Whoami
	SandboxReply  = apitype.SandboxReply
	RunReply      = apitype.RunReply
	FsModeReply   = apitype.FsModeReply
	ScheduleReply = apitype.ScheduleReply
	AppList       = apitype.AppList
)
