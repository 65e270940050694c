package wire

import (
	"errors"
	"testing"

	"github.com/tablejournal/tablejournal/events/rules"
)

// TestIsErase reads the command-kind header's values: none and
// CommandPlain are ordinary commands, CommandErase an erase, anything else
// a validation error of rule UnknownCommand.
func TestIsErase(t *testing.T) {
	for _, tt := range []struct {
		v     string
		erase bool
		ok    bool
	}{{"", false, true}, {CommandPlain, false, true}, {CommandErase, true, true}, {"Erase", false, false}, {"purge", false, false}} {
		erase, err := IsErase(tt.v)
		var ve *rules.ValidationError
		if erase != tt.erase || (err == nil) != tt.ok || err != nil && (!errors.As(err, &ve) || ve.Rule != rules.UnknownCommand) {
			t.Errorf("IsErase(%q) = %v, %v", tt.v, erase, err)
		}
	}
}

// TestCheckSchema accepts no header and SchemaVersion, and refuses another
// version with rule SchemaVersion.
func TestCheckSchema(t *testing.T) {
	for _, v := range []string{"", SchemaVersion} {
		if err := CheckSchema(v); err != nil {
			t.Errorf("CheckSchema(%q): %v", v, err)
		}
	}
	var ve *rules.ValidationError
	if err := CheckSchema("2"); !errors.As(err, &ve) || ve.Rule != rules.SchemaVersion || ve.Field != HeaderSchema {
		t.Errorf("CheckSchema(2): %v", err)
	}
}
