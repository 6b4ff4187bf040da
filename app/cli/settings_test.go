package cli

import (
	"reflect"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/app"
)

// TestEverySettingIsExplained: `senclaw settings` says what each of the
// engine's settings is.
func TestEverySettingIsExplained(t *testing.T) {
	t.Parallel()
	st := reflect.TypeOf(app.Settings{})
	for i := 0; i < st.NumField(); i++ {
		name, _, _ := strings.Cut(st.Field(i).Tag.Get("json"), ",")
		if settingHelp[name] == "" {
			t.Errorf("senclaw settings does not say what %s is (settingHelp)", name)
		}
	}
}
