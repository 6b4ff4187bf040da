package scheduler

import "github.com/senclaw/sandbox/app/apitype"

// The scheduler's types that cross the API are apitype's.
type (
	Schedule = apitype.ScheduleConfig
	Spec     = apitype.ScheduleSpec
	Firing   = apitype.Firing
	View     = apitype.Schedule
)

// The constants of those types.
const (
	OutcomeOK      = apitype.OutcomeOK
	OutcomeFailed  = apitype.OutcomeFailed
	OutcomeRefused = apitype.OutcomeRefused
	OutcomeSkipped = apitype.OutcomeSkipped
	OutcomeMissed  = apitype.OutcomeMissed
	OutcomeRunning = apitype.OutcomeRunning
)
