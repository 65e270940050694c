package cli

import (
	"fmt"
	"io"
	"strings"
)

// spec is one entry of a command table: a (sub)command's name, the usage
// line that follows the name, and a one-line summary. Every usage text is
// generated from the tables, so a usage line is written once and the
// overview cannot drift from a subcommand's own --help.
type spec struct {
	name    string
	usage   string
	summary string
}

func (s spec) entrySpec() spec { return s }

// tableEntry is an entry of a command table: a spec and what runs it.
type tableEntry interface{ entrySpec() spec }

// specsOf returns the specs of a command table.
func specsOf[E tableEntry](table []E) []spec {
	specs := make([]spec, len(table))
	for i, e := range table {
		specs[i] = e.entrySpec()
	}
	return specs
}

// nameList renders the names of a command table as "a, b or c".
func nameList(specs []spec) string {
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.name
	}
	return orList(names)
}

// line is the usage line of the command in program prog: "replay asof
// --table T ...".
func (s spec) line(prog string) string {
	return strings.Join(strings.Fields(prog+" "+s.name+" "+s.usage), " ")
}

// writeCommands writes the "Commands:" block of an overview: each
// command's usage line, its summary indented below.
func writeCommands(w io.Writer, prog string, specs []spec) {
	fmt.Fprintln(w, "Commands:")
	for _, s := range specs {
		fmt.Fprintf(w, "  %s\n      %s\n", s.line(prog), s.summary)
	}
}

// subUsage is the --help head of one subcommand: its usage line, then
// more, or else its summary as a sentence.
func subUsage(prog string, s spec, more string) string {
	if more == "" {
		more = strings.ToUpper(s.summary[:1]) + s.summary[1:] + ".\n"
	}
	return "Usage: " + s.line(prog) + "\n\n" + more + "\nFlags:\n"
}

// orList renders names as "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
