package writercmd

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/tablejournal/tablejournal/events/edm"
)

// setTypes lists the type names --set takes, for error messages.
const setTypes = "string, bool, int32 (int), int64, double, datetime, guid, binary"

// parseSet parses one --set argument, name=value or name:type=value, into a
// property name and a typed value. readFile reads the PATH of
// name:binary=@PATH. The property name itself is checked later, by the
// command's validation.
func parseSet(arg string, readFile func(string) ([]byte, error)) (string, edm.Value, error) {
	lhs, lit, ok := strings.Cut(arg, "=")
	if !ok {
		return "", edm.Value{}, errors.New("no '=': want name=value or name:type=value")
	}
	name, typ, typed := strings.Cut(lhs, ":")
	if name == "" {
		return "", edm.Value{}, errors.New("no property name before '='")
	}
	if !typed {
		return name, edm.String(lit), nil
	}
	t := strings.ToLower(typ)
	t = strings.TrimPrefix(t, "edm.")
	switch t {
	case "string":
		return name, edm.String(lit), nil
	case "bool", "boolean":
		switch strings.ToLower(lit) {
		case "true":
			return name, edm.Bool(true), nil
		case "false":
			return name, edm.Bool(false), nil
		}
		return "", edm.Value{}, fmt.Errorf("%q is not a bool: want true or false", lit)
	case "int32", "int":
		n, err := strconv.ParseInt(lit, 10, 32)
		if err != nil {
			return "", edm.Value{}, fmt.Errorf("%q is not an int32: want a decimal integer from %d to %d", lit, int32(-1<<31), int32(1<<31-1))
		}
		return name, edm.Int32(int32(n)), nil
	case "int64":
		n, err := strconv.ParseInt(lit, 10, 64)
		if err != nil {
			return "", edm.Value{}, fmt.Errorf("%q is not an int64: want a decimal integer from %d to %d", lit, int64(-1<<63), int64(1<<63-1))
		}
		return name, edm.Int64(n), nil
	case "double":
		f, err := edm.ParseDouble(lit)
		if err != nil {
			return "", edm.Value{}, fmt.Errorf("%q is not a double: want a decimal number, NaN, Infinity or -Infinity", lit)
		}
		return name, edm.Double(f), nil
	case "datetime":
		tm, err := edm.ParseDateTime(lit)
		if err != nil {
			return "", edm.Value{}, fmt.Errorf("not a datetime: %w; want RFC 3339 such as 2026-11-21T10:00:00.1234567Z", err)
		}
		return name, edm.DateTime(tm), nil
	case "guid":
		v, err := edm.Guid(lit)
		if err != nil {
			return "", edm.Value{}, fmt.Errorf("%w; want 8-4-4-4-12 hex digits", err)
		}
		return name, v, nil
	case "binary":
		if path, ok := strings.CutPrefix(lit, "@"); ok {
			b, err := readFile(path)
			if err != nil {
				return "", edm.Value{}, fmt.Errorf("binary from file: %w", err)
			}
			return name, edm.Binary(b), nil
		}
		b, err := base64.StdEncoding.Strict().DecodeString(lit)
		if err != nil || strings.ContainsAny(lit, "\r\n") {
			return "", edm.Value{}, errors.New("not a binary: want standard padded base64, or @PATH to read a file")
		}
		return name, edm.Binary(b), nil
	}
	return "", edm.Value{}, fmt.Errorf("unknown type %q: want one of %s", typ, setTypes)
}
