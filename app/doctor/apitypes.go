package doctor

import "github.com/senclaw/sandbox/app/apitype"

// The doctor's report is apitype's, which the CLI reads.
type (
	Check  = apitype.DoctorCheck
	Report = apitype.DoctorReport
)
