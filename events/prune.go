package events

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/tablejournal/tablejournal/events/rules"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// Prune is the prune part of a command (SPEC §2, "Prune commands"): in the
// command's partition, remove the version and tombstone rows that stopped
// being current at or before Horizon. It names no row and carries no row
// values; a command with a Prune has no row operations.
type Prune struct {
	// Horizon is a journal sequence: every state of the partition at
	// Horizon or later stays readable, states before it are pruned.
	Horizon uint64
}

// MaxPruneHorizon is the largest horizon: sequences are stored as Int64.
const MaxPruneHorizon = math.MaxInt64

// fieldPrune is the bit of the "prune" field among the command's fields.
const fieldPrune = fieldMeta << 1

// pruneFields are the fields of a prune part.
var pruneFields = []string{"horizon"}

// IsPrune reports whether c is a prune command.
func (c *Command) IsPrune() bool { return c != nil && c.Prune != nil }

func (p *Prune) equal(o *Prune) bool {
	if p == nil || o == nil {
		return p == o
	}
	return *p == *o
}

// validatePrune checks the rules of a prune command beyond those of every
// command (ID, table, key, issuer, meta).
func (c *Command) validatePrune() error {
	if len(c.Ops) != 0 {
		return rules.Errorf("ops", rules.PruneOps, "a prune command has no row operations, this one has %d", len(c.Ops))
	}
	if h := c.Prune.Horizon; h == 0 || h > MaxPruneHorizon {
		return rules.Errorf("prune.horizon", rules.PruneHorizon, "horizon %d, want 1..%d", h, uint64(MaxPruneHorizon))
	}
	return nil
}

// CheckPruneSeq checks a prune command against its own journal sequence:
// its horizon must be below it (rules.PruneFuture), so that a prune never
// speaks for states the journal does not hold yet.
func CheckPruneSeq(c *Command, seq uint64) error {
	if c.IsPrune() && c.Prune.Horizon >= seq {
		return rules.Errorf("prune.horizon", rules.PruneFuture, "horizon %d is not below the prune command's own journal sequence %d", c.Prune.Horizon, seq)
	}
	return nil
}

// appendPruneJSON appends `,"prune":{"horizon":N}`.
func appendPruneJSON(b []byte, p *Prune) []byte {
	b = append(b, `,"prune":{"horizon":`...)
	b = strconv.AppendUint(b, p.Horizon, 10)
	return append(b, '}')
}

// prune reads the prune part of the JSON form: null (absent) or an object
// holding "horizon", an unsigned integer.
func (d *jsonDecoder) prune() (*Prune, error) {
	p := topPath("prune")
	tok, err := d.token(p)
	if tok == nil || err != nil {
		return nil, err
	}
	if tok != json.Delim('{') {
		return nil, p.fail(rules.Malformed, "prune is not an object")
	}
	pr := new(Prune)
	seen := false
	for d.dec.More() {
		key, err := d.key(p)
		if err != nil {
			return nil, err
		}
		if key != "horizon" {
			return nil, p.fail(rules.UnknownField, "unknown field %q; a prune has only %q", key, pruneFields[0])
		}
		if seen {
			return nil, topPath("prune.horizon").fail(rules.DuplicateField, "field given twice")
		}
		seen = true
		hp := topPath("prune.horizon")
		tok, err := d.token(hp)
		if err != nil {
			return nil, err
		}
		n, ok := tok.(json.Number)
		if !ok || !isIntegerLiteral(string(n)) {
			return nil, hp.fail(rules.Malformed, "horizon is not an integer")
		}
		if pr.Horizon, err = strconv.ParseUint(string(n), 10, 64); err != nil {
			return nil, hp.fail(rules.Malformed, "horizon %s is out of range", n)
		}
	}
	if err := d.close(p); err != nil {
		return nil, err
	}
	return pr, nil
}

// prune writes the prune part of the msgpack form.
func (e *mpEncoder) prune(p *Prune) {
	e.str("prune")
	e.mapLen(1)
	e.str("horizon")
	e.err(e.enc.EncodeUint(p.Horizon))
}

// prune reads the prune part of the msgpack form: nil (absent) or a map
// holding "horizon", a non-negative integer.
func (d *mpDecoder) prune() (*Prune, error) {
	p := topPath("prune")
	c, err := d.peek(p)
	if err != nil || c == msgpcode.Nil {
		return nil, d.nilOr(err)
	}
	n, err := d.mapLen(p, "prune")
	if err != nil {
		return nil, err
	}
	pr := new(Prune)
	seen := false
	for range n {
		k, err := d.key(p)
		if err != nil {
			return nil, err
		}
		if string(k) != "horizon" {
			return nil, p.fail(rules.UnknownField, "unknown field %q; a prune has only %q", string(k), pruneFields[0])
		}
		if seen {
			return nil, topPath("prune.horizon").fail(rules.DuplicateField, "field given twice")
		}
		seen = true
		hp := topPath("prune.horizon")
		c, err := d.peek(hp)
		if err != nil {
			return nil, err
		}
		if !isInt(c) {
			return nil, hp.fail(rules.Malformed, "horizon is not an integer")
		}
		if c == msgpcode.Uint64 {
			u, err := d.dec.DecodeUint64()
			if err != nil {
				return nil, d.wrap(hp, err)
			}
			pr.Horizon = u
			continue
		}
		v, err := d.dec.DecodeInt64()
		if err != nil {
			return nil, d.wrap(hp, err)
		}
		if v < 0 {
			return nil, hp.fail(rules.Malformed, "horizon %d is negative", v)
		}
		pr.Horizon = uint64(v)
	}
	return pr, nil
}
