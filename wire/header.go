package wire

import "github.com/tablejournal/tablejournal/events/rules"

// The NATS message headers of the contract (SPEC §2, §3): what a journal
// message's body is and which kind of command it holds, so that a consumer
// can route a message without decoding it.
const (
	// HeaderContentType names the body's encoding: ContentTypeJSON or
	// ContentTypeMsgpack. No header means msgpack.
	HeaderContentType = "Content-Type"
	// HeaderSchema carries SchemaVersion. No header means the current one.
	HeaderSchema = "Tablejournal-Schema"
	// HeaderCommand names the kind of command a journal message carries:
	// CommandErase, or "" / CommandPlain for an ordinary command.
	HeaderCommand = "Tablejournal-Command"
	// HeaderBodySHA256 carries the hex SHA-256 of a command message's
	// body, so that a writer can tell a republish of the same command from
	// another command under the same ID without decoding the stored one.
	HeaderBodySHA256 = "Tablejournal-Body-Sha256"
)

// Content types of the two wire forms, as carried in HeaderContentType;
// events.Encode and events.Decode take them.
const (
	ContentTypeJSON    = "application/json"
	ContentTypeMsgpack = "application/msgpack"
)

// SchemaVersion is the version of the command schema the events codecs
// read and write, as carried in HeaderSchema.
const SchemaVersion = "1"

// The values of HeaderCommand.
const (
	CommandPlain = "command"
	CommandErase = "erase"
)

// CheckSchema reports whether a HeaderSchema value is one the codecs read:
// SchemaVersion, or "" (no header). Otherwise it returns a
// *rules.ValidationError with rules.SchemaVersion.
func CheckSchema(version string) error {
	if version == "" || version == SchemaVersion {
		return nil
	}
	return rules.Errorf(HeaderSchema, rules.SchemaVersion, "schema version %q is not %q", version, SchemaVersion)
}

// IsErase reports whether a HeaderCommand value names an erase. Any value
// but "", CommandPlain and CommandErase is a *rules.ValidationError with
// rules.UnknownCommand.
func IsErase(headerValue string) (bool, error) {
	switch headerValue {
	case "", CommandPlain:
		return false, nil
	case CommandErase:
		return true, nil
	}
	return false, rules.Errorf(HeaderCommand, rules.UnknownCommand, "unknown command kind %q; want %q or %q", headerValue, CommandPlain, CommandErase)
}
