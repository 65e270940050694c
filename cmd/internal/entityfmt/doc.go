// Package entityfmt is how the commands print an entity and its values:
// as text with each value's EDM type (Edm.Int64(9007199254740993)), and
// as the OData JSON form in which every EDM type survives.
package entityfmt
