package cli

import (
	"fmt"
	"io"
	"strings"
)

// Spec is one entry of a command table: a (sub)command's name, the usage
// line that follows the name, and a one-line summary. Every usage text is
// generated from the tables, so a usage line is written once and the
// overview cannot drift from a subcommand's own --help.
type Spec struct {
	Name    string
	Usage   string
	Summary string
}

// NewSpec is the Spec of a (sub)command: its name, usage line and summary.
func NewSpec(name, usage, summary string) Spec { return Spec{name, usage, summary} }

func (s Spec) entrySpec() Spec { return s }

// tableEntry is an entry of a command table: a Spec and what runs it.
type tableEntry interface{ entrySpec() Spec }

// SpecsOf returns the specs of a command table.
func SpecsOf[E tableEntry](table []E) []Spec {
	specs := make([]Spec, len(table))
	for i, e := range table {
		specs[i] = e.entrySpec()
	}
	return specs
}

// NameList renders the names of a command table as "a, b or c".
func NameList(specs []Spec) string {
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
	}
	return orList(names)
}

// Line is the usage line of the command in program prog: "replay asof
// --table T ...".
func (s Spec) Line(prog string) string {
	return strings.Join(strings.Fields(prog+" "+s.Name+" "+s.Usage), " ")
}

// WriteCommands writes the "Commands:" block of an overview: each
// command's usage line, its summary indented below.
func WriteCommands(w io.Writer, prog string, specs []Spec) {
	fmt.Fprintln(w, "Commands:")
	for _, s := range specs {
		fmt.Fprintf(w, "  %s\n      %s\n", s.Line(prog), s.Summary)
	}
}

// SubUsage is the --help head of one subcommand: its usage line, then
// more, or else its summary as a sentence.
func SubUsage(prog string, s Spec, more string) string {
	if more == "" {
		more = strings.ToUpper(s.Summary[:1]) + s.Summary[1:] + ".\n"
	}
	return "Usage: " + s.Line(prog) + "\n\n" + more + "\nFlags:\n"
}

// orList renders names as "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
