package projection

import "github.com/nats-io/nats.go"

// The W3C Trace Context headers. A command's journal message may carry
// them; the projector copies them onto the command's outcome and change
// events, so a service's trace reaches what its command did. No tracing
// SDK is involved: the projector starts no spans.
const (
	HeaderTraceparent = "traceparent"
	HeaderTracestate  = "tracestate"
)

// traceFrom reads the trace context of a message's headers. Header names
// in NATS are case-sensitive; W3C spells them in lower case, HTTP habits
// capitalize them, so both are read.
func traceFrom(h nats.Header) TraceContext {
	parent := h.Get(HeaderTraceparent)
	if parent == "" {
		parent = h.Get("Traceparent")
	}
	if !validTraceparent(parent) {
		return TraceContext{}
	}
	state := h.Get(HeaderTracestate)
	if state == "" {
		state = h.Get("Tracestate")
	}
	return TraceContext{Parent: parent, State: state}
}

// setTrace writes tc onto the headers of an outcome or change event.
func setTrace(tc TraceContext, h nats.Header) {
	if tc.Parent == "" {
		return
	}
	h.Set(HeaderTraceparent, tc.Parent)
	if tc.State != "" {
		h.Set(HeaderTracestate, tc.State)
	}
}

// validTraceparent checks the form version-traceid-parentid-flags of W3C
// Trace Context: lower-case hex fields of 2, 32, 16 and 2 digits, ids not
// all zero, version not ff; a future version may append fields after a
// dash.
func validTraceparent(s string) bool {
	if len(s) < 55 || (len(s) > 55 && s[55] != '-') || s[:2] == "ff" || (s[:2] == "00" && len(s) != 55) {
		return false
	}
	for i, n := range []int{2, 32, 16, 2} {
		if i > 0 {
			if s[0] != '-' {
				return false
			}
			s = s[1:]
		}
		zero := true
		for j := range n {
			c := s[j]
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return false
			}
			zero = zero && c == '0'
		}
		if zero && (i == 1 || i == 2) {
			return false
		}
		s = s[n:]
	}
	return true
}
