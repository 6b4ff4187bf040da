package app

import "github.com/senclaw/sandbox/app/apitype"

// The engine's types that cross the API are apitype's, so that a
// client can read them without linking the engine.
type (
	Sandbox         = apitype.Sandbox
	SandboxConfig   = apitype.SandboxConfig
	Settings        = apitype.Settings
	GuardSettings   = apitype.GuardSettings
	ExecSettings    = apitype.ExecSettings
	ExecPolicy      = apitype.ExecPolicy
	RunRecord       = apitype.RunRecord
	RunLog          = apitype.RunLog
	QueueStats      = apitype.QueueStats
	Notes           = apitype.Notes
	PortsResult     = apitype.PortsResult
	MountResult     = apitype.MountResult
	FileEntry       = apitype.FileEntry
	FileContent     = apitype.FileContent
	TerminalRequest = apitype.TerminalRequest
	Control         = apitype.Control
	Stats           = apitype.Stats
	ProcessInfo     = apitype.ProcessInfo
	StatsPoint      = apitype.StatsPoint
	FsModeInfo      = apitype.FsModeInfo
	Capabilities    = apitype.Capabilities
	EngineInfo      = apitype.EngineInfo
	EngineSettings  = apitype.EngineSettings
	Leftover        = apitype.Leftover
	CacheInfo       = apitype.CacheInfo
	Refusal         = apitype.Refusal
	SecretInfo      = apitype.SecretInfo
	SecretSpec      = apitype.SecretSpec
	SandboxRef      = apitype.SandboxRef
	// The policy check's (policycheck.go).
	PolicyCheckRequest = apitype.PolicyCheckRequest
	PolicyCheck        = apitype.PolicyCheck
	PolicyValue        = apitype.PolicyValue
	PolicyFileProblem  = apitype.PolicyFileProblem
	PolicyLearnRequest = apitype.PolicyLearnRequest
	PolicyLearn        = apitype.PolicyLearn
	PolicyApplyRequest = apitype.PolicyApplyRequest
)

// The constants of those types.
const (
	SourceMCP               = apitype.SourceMCP
	SourceREST              = apitype.SourceREST
	SourceCLI               = apitype.SourceCLI
	SourceAgentShell        = apitype.SourceAgentShell
	SourceScheduler         = apitype.SourceScheduler
	SourceCode              = apitype.SourceCode
	SourceSpaceApp          = apitype.SourceSpaceApp
	MaxFileRead             = apitype.MaxFileRead
	MaxFileWrite            = apitype.MaxFileWrite
	MaxCodeBytes            = apitype.MaxCodeBytes
	DefaultInstallTimeoutMs = apitype.DefaultInstallTimeoutMs
)
