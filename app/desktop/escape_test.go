package desktop

import (
	"strings"
	"testing"

	"github.com/senclaw/sandbox/app"
)

// What an agent chose (a command, a run's source, a Space App's name)
// reaches a notification's summary and body escaped: no control, bidi or
// line-forging character survives.
func TestNotificationsEscapeWhatAgentsChose(t *testing.T) {
	t.Parallel()
	evil := "x\x1b]0;pwned\x07\u202eexe.txt\u009b31m\u0085"
	r := refusedRun("r1")
	r.Command = "cat " + evil
	r.Source = "rest" + evil
	for _, n := range []Notification{refusedNotification([]app.RunRecord{r}), appRestartNotification([]AppAlert{{ID: "a", Name: "app" + evil, Reason: evil}}), appRestartNotification([]AppAlert{{ID: "a", Name: "a" + evil}, {ID: "b", Name: "b"}}),
		appGaveUpNotification([]AppAlert{{ID: "a", Name: "a" + evil, LastLog: []string{evil}}})} {
		for _, text := range []string{n.Summary, n.Body} {
			if strings.ContainsAny(text, "\x1b\x07\u202e\u009b\u0085") {
				t.Errorf("raw control characters in %q", text)
			}
		}
		if !strings.Contains(n.Summary+n.Body, `\x1b]0;pwned\a\u202e`) {
			t.Errorf("the escaped value is missing from %q / %q", n.Summary, n.Body)
		}
	}
}
