package spaceapps

import "github.com/senclaw/sandbox/app/apitype"

// The Space Apps' types that cross the API are apitype's.
type (
	AppView         = apitype.AppView
	HealthView      = apitype.AppHealth
	SandboxSummary  = apitype.AppSandboxSummary
	Overview        = apitype.AppOverview
	SandboxSettings = apitype.AppSandboxSettings
	Folder          = apitype.AppFolder
	SandboxPatch    = apitype.AppSandboxPatch
	RegisterRequest = apitype.AppRegisterRequest
	RegisterReply   = apitype.AppRegisterReply
	StartReply      = apitype.AppStartReply
	Runtime         = apitype.AppRuntime
	ProxyCounts     = apitype.AppProxyCounts
	LaunchView      = apitype.AppLaunch
	HealthPoint     = apitype.AppHealthPoint
	LogChunk        = apitype.AppLogChunk
	SandboxView     = apitype.AppSandboxView
	SandboxReply    = apitype.AppSandboxReply
	IsolationView   = apitype.AppIsolation
)

// The constants of those types.
const (
	NetworkAll   = apitype.AppNetworkAll
	NetworkHosts = apitype.AppNetworkHosts
	NetworkOff   = apitype.AppNetworkOff
)
