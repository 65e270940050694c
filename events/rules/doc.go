// Package rules names the checks a command can fail (SPEC §2) and the error
// that says which one failed where: a Rule is a stable string recorded in
// rejected outcomes, and a *ValidationError, which wraps ErrInvalid (checked
// with errors.Is), carries the field and the Rule. Package events decodes
// and validates commands against these rules; the projector, the client and
// the CLI test for them. It is a leaf: it imports nothing of this module.
package rules
