package console

import (
	"regexp"
	"strings"

	"github.com/tablejournal/tablejournal/wire"
)

// ruleDetail finds "rule <name>: " in a rejection's reason: what follows
// is the rule's detail, which may quote the value that broke it
// (rules.ValidationError: "<field>: rule <rule>: <detail>").
var ruleDetail = regexp.MustCompile(`rule [a-z0-9-]+: `)

// hideReasonValues is a rejection's reason as a console hiding values
// shows it (issue 36 item 4): a command rejected as invalid may have had
// its value quoted in the detail of the rule it broke, so the detail is
// cut after the field and the rule; an invalid reason of another shape
// (a message that did not decode) is hidden whole. Reasons of other codes
// name rows, versions and limits, never property values, and are kept.
//
// Code "note" is the command page's note on a body it does not show: hidden
// the same way when it says the body does not decode, else kept.
func hideReasonValues(code, reason string) string {
	if code == "note" {
		if !strings.Contains(reason, "does not decode") {
			return reason
		}
		code = string(wire.CodeInvalid)
	}
	if code != "" && code != string(wire.CodeInvalid) {
		return reason
	}
	if loc := ruleDetail.FindStringIndex(reason); loc != nil {
		return reason[:loc[1]] + "(detail hidden: it may quote values)"
	}
	if reason == "" {
		return ""
	}
	return "(reason hidden: it may quote values)"
}
