package writercmd

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/tablejournal/tablejournal/events"
)

// setTypes lists the type names --set takes, for error messages.
const setTypes = "string, bool, int32 (int), int64, double, datetime, guid, binary"

// parseSet parses one --set argument, name=value or name:type=value, into a
// property name and a typed value. readFile reads the PATH of
// name:binary=@PATH. The property name itself is checked later, by the
// command's validation.
func parseSet(arg string, readFile func(string) ([]byte, error)) (string, events.Value, error) {
	lhs, lit, ok := strings.Cut(arg, "=")
	if !ok {
		return "", events.Value{}, errors.New("no '=': want name=value or name:type=value")
	}
	name, typ, typed := strings.Cut(lhs, ":")
	if name == "" {
		return "", events.Value{}, errors.New("no property name before '='")
	}
	if !typed {
		return name, events.String(lit), nil
	}
	t := strings.ToLower(typ)
	t = strings.TrimPrefix(t, "edm.")
	switch t {
	case "string":
		return name, events.String(lit), nil
	case "bool", "boolean":
		switch strings.ToLower(lit) {
		case "true":
			return name, events.Bool(true), nil
		case "false":
			return name, events.Bool(false), nil
		}
		return "", events.Value{}, fmt.Errorf("%q is not a bool: want true or false", lit)
	case "int32", "int":
		n, err := strconv.ParseInt(lit, 10, 32)
		if err != nil {
			return "", events.Value{}, fmt.Errorf("%q is not an int32: want a decimal integer from %d to %d", lit, int32(-1<<31), int32(1<<31-1))
		}
		return name, events.Int32(int32(n)), nil
	case "int64":
		n, err := strconv.ParseInt(lit, 10, 64)
		if err != nil {
			return "", events.Value{}, fmt.Errorf("%q is not an int64: want a decimal integer from %d to %d", lit, int64(-1<<63), int64(1<<63-1))
		}
		return name, events.Int64(n), nil
	case "double":
		f, err := events.ParseDouble(lit)
		if err != nil {
			return "", events.Value{}, fmt.Errorf("%q is not a double: want a decimal number, NaN, Infinity or -Infinity", lit)
		}
		return name, events.Double(f), nil
	case "datetime":
		tm, err := events.ParseDateTime(lit)
		if err != nil {
			return "", events.Value{}, fmt.Errorf("not a datetime: %w; want RFC 3339 such as 2026-11-21T10:00:00.1234567Z", err)
		}
		return name, events.DateTime(tm), nil
	case "guid":
		v, err := events.Guid(lit)
		if err != nil {
			return "", events.Value{}, fmt.Errorf("%w; want 8-4-4-4-12 hex digits", err)
		}
		return name, v, nil
	case "binary":
		if path, ok := strings.CutPrefix(lit, "@"); ok {
			b, err := readFile(path)
			if err != nil {
				return "", events.Value{}, fmt.Errorf("binary from file: %w", err)
			}
			return name, events.Binary(b), nil
		}
		b, err := base64.StdEncoding.Strict().DecodeString(lit)
		if err != nil || strings.ContainsAny(lit, "\r\n") {
			return "", events.Value{}, errors.New("not a binary: want standard padded base64, or @PATH to read a file")
		}
		return name, events.Binary(b), nil
	}
	return "", events.Value{}, fmt.Errorf("unknown type %q: want one of %s", typ, setTypes)
}
