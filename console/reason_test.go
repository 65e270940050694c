package console

import "testing"

func TestHideReasonValues(t *testing.T) {
	tests := []struct{ code, reason, want string }{
		{"invalid", `ops[0].entity.email2: rule bad-int64: "alice.secret@example.com" is not a decimal integer`,
			`ops[0].entity.email2: rule bad-int64: (detail hidden: it may quote values)`},
		{"invalid", `rule bad-guid: "zzz" is not a GUID in canonical lowercase 8-4-4-4-12 form`,
			`rule bad-guid: (detail hidden: it may quote values)`},
		{"invalid", `malformed JSON near "alice"`, `(reason hidden: it may quote values)`},
		{"", `ops[0]: rule bad-int32: 2147483648 is out of the Int32 range`, `ops[0]: rule bad-int32: (detail hidden: it may quote values)`},
		{"version-mismatch", `ops[0]: row r is at version 3, not 2`, `ops[0]: row r is at version 3, not 2`},
		{"invalid", "", ""},
		{"note", "the journal no longer stores this command (erased or trimmed)", "the journal no longer stores this command (erased or trimmed)"},
		{"note", `the command does not decode: decode seq 12: ops[0].entity["email2"]: rule bad-int64: "alice" is not a decimal integer`,
			`the command does not decode: decode seq 12: ops[0].entity["email2"]: rule bad-int64: (detail hidden: it may quote values)`},
		{"note", `the command does not decode: unexpected "alice"`, `(reason hidden: it may quote values)`},
	}
	for _, tt := range tests {
		if got := hideReasonValues(tt.code, tt.reason); got != tt.want {
			t.Errorf("hideReasonValues(%q, %q) = %q, want %q", tt.code, tt.reason, got, tt.want)
		}
	}
}
