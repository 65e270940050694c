package azure

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/store"
)

// The JSON names of the system properties and the annotation suffix.
const (
	propPK        = "PartitionKey"
	propRK        = "RowKey"
	propTimestamp = "Timestamp"
	propETag      = "odata.etag"
	odataType     = "@odata.type"
)

// encodeEntity renders an entity as the JSON body of an insert or update,
// in minimal metadata: strings, booleans and Int32 as plain JSON, every
// other type with its @odata.type annotation.
//
// Doubles are always annotated: the SDK decodes the body into a map before
// sending it, which turns 5.0 into 5, and Azure would then store an Int32.
// With the annotation the service parses the number as a Double whatever
// its spelling.
func encodeEntity(pk, rk string, props edm.Entity) ([]byte, error) {
	m := make(map[string]any, 2+2*len(props))
	m[propPK] = pk
	m[propRK] = rk
	for name, v := range props {
		val, typ, err := jsonValue(v)
		if err != nil {
			return nil, fmt.Errorf("property %s: %w", name, err)
		}
		m[name] = val
		if typ != "" {
			m[name+odataType] = typ
		}
	}
	return json.Marshal(m)
}

// jsonValue returns the JSON value of v and its annotation ("" for none).
func jsonValue(v edm.Value) (any, string, error) {
	switch v.Type {
	case edm.TypeString:
		return v.Str, "", nil
	case edm.TypeBoolean:
		return v.Bool, "", nil
	case edm.TypeInt32:
		return v.Int, "", nil
	case edm.TypeInt64:
		return strconv.FormatInt(v.Int, 10), "Edm.Int64", nil
	case edm.TypeDouble:
		if math.IsNaN(v.Float) || math.IsInf(v.Float, 0) {
			return edm.FormatDouble(v.Float), "Edm.Double", nil
		}
		return v.Float, "Edm.Double", nil
	case edm.TypeDateTime:
		return edm.FormatDateTime(v.Time), "Edm.DateTime", nil
	case edm.TypeGuid:
		return v.Str, "Edm.Guid", nil
	case edm.TypeBinary:
		return base64.StdEncoding.EncodeToString(v.Bytes), "Edm.Binary", nil
	}
	return nil, "", fmt.Errorf("unknown type %v: %w", v.Type, store.ErrInvalid)
}

// decodeEntity parses one entity of a response body. Numbers are read from
// their literal: a number with a fraction or an exponent is a Double, an
// integer is an Int32 (Azure annotates Int64), unless an annotation says
// otherwise.
func decodeEntity(raw json.RawMessage) (store.Entity, error) {
	var fields map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&fields); err != nil {
		return store.Entity{}, fmt.Errorf("decode entity: %w", err)
	}
	var e store.Entity
	e.Props = make(edm.Entity, len(fields))
	for name, val := range fields {
		var err error
		switch {
		case name == propPK:
			err = json.Unmarshal(val, &e.PK)
		case name == propRK:
			err = json.Unmarshal(val, &e.RK)
		case name == propETag:
			err = json.Unmarshal(val, &e.ETag)
		case name == propTimestamp:
			var s string
			if err = json.Unmarshal(val, &s); err == nil {
				e.Timestamp, err = time.Parse(time.RFC3339Nano, s)
			}
		case strings.HasPrefix(name, "odata."), strings.Contains(name, "@odata."):
			// metadata and annotations: read with their property
		default:
			var typ string
			if ann, ok := fields[name+odataType]; ok {
				if err = json.Unmarshal(ann, &typ); err != nil {
					break
				}
			}
			var v edm.Value
			var present bool
			v, present, err = decodeValue(val, typ)
			if present && err == nil {
				e.Props[name] = v
			}
		}
		if err != nil {
			return store.Entity{}, fmt.Errorf("decode entity: property %s: %w", name, err)
		}
	}
	return e, nil
}

// decodeValue parses one property value given its annotation. A JSON null
// is no value (present false): Azure does not store nulls.
func decodeValue(raw json.RawMessage, typ string) (v edm.Value, present bool, err error) {
	raw = bytes.TrimSpace(raw)
	if bytes.Equal(raw, []byte("null")) {
		return edm.Value{}, false, nil
	}
	if typ == "" {
		switch raw[0] {
		case '"':
			typ = "Edm.String"
		case 't', 'f':
			typ = "Edm.Boolean"
		default:
			if bytes.ContainsAny(raw, ".eE") {
				typ = "Edm.Double"
			} else if i, perr := strconv.ParseInt(string(raw), 10, 32); perr == nil {
				return edm.Int32(int32(i)), true, nil
			} else {
				typ = "Edm.Double" // an integer beyond Int32 without annotation
			}
		}
	}
	t, ok := edm.ParseType(typ)
	if !ok {
		return v, false, fmt.Errorf("unknown type %q", typ)
	}
	// text is the value as a string: JSON strings unquoted, other literals
	// (numbers, booleans) as written.
	text := string(raw)
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &text); err != nil {
			return v, false, err
		}
	}
	switch t {
	case edm.TypeString:
		if raw[0] != '"' {
			return v, false, errors.New("Edm.String value is not a string")
		}
		return edm.String(text), true, nil
	case edm.TypeBoolean:
		b, err := strconv.ParseBool(text)
		return edm.Bool(b), err == nil, err
	case edm.TypeInt32:
		i, err := strconv.ParseInt(text, 10, 32)
		return edm.Int32(int32(i)), err == nil, err
	case edm.TypeInt64:
		i, err := strconv.ParseInt(text, 10, 64)
		return edm.Int64(i), err == nil, err
	case edm.TypeDouble:
		f, err := edm.ParseDouble(text)
		return edm.Double(f), err == nil, err
	case edm.TypeDateTime:
		tm, err := time.Parse(time.RFC3339Nano, text)
		if err != nil {
			return v, false, err
		}
		return edm.DateTime(tm), true, nil
	case edm.TypeGuid:
		g, err := edm.Guid(text)
		return g, err == nil, err
	case edm.TypeBinary:
		b, err := base64.StdEncoding.DecodeString(text)
		return edm.Binary(b), err == nil, err
	}
	return v, false, fmt.Errorf("unknown type %q", typ)
}

// decodeEntities parses the body of a query response: {"value": [...]}.
func decodeEntities(body []byte) ([]store.Entity, error) {
	var resp struct {
		Value []json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, fmt.Errorf("decode query response: %w", err)
	}
	out := make([]store.Entity, 0, len(resp.Value))
	for _, raw := range resp.Value {
		e, err := decodeEntity(raw)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}
