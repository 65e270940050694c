package decide

// TraceContext is the W3C trace context of a journal message.
type TraceContext struct {
	// Parent is the traceparent header, "" when the message had none or
	// it was malformed.
	Parent string
	// State is the tracestate header, kept only with a valid Parent.
	State string
}
