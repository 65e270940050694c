package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"runtime/debug"
	"strings"
)

// Help and usage errors, the same for every command: --help prints the
// usage and the flags to stdout and exits 0; a command-line mistake prints
// one line naming it to stderr (Exit adds "see --help") and exits 2;
// --version prints the version to stdout.

// QuietFlagSet returns a flag set that prints nothing itself: parse errors
// are returned, help is printed by PrintHelp.
func QuietFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// VersionFlag registers --version on fs.
func VersionFlag(fs *flag.FlagSet) *bool {
	return fs.Bool("version", false, "print the version and exit")
}

// PrintHelp prints a command's usage text and its flags to w.
func PrintHelp(w io.Writer, usage string, fs *flag.FlagSet) {
	fmt.Fprint(w, usage)
	out := fs.Output()
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(out)
}

// FlagError turns an error of flag.FlagSet.Parse into a usage error that
// names the flag as users type it: "--seq", not "-seq".
func FlagError(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		msg = "unknown flag --" + name
	} else if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		msg = "flag --" + name + " needs a value"
	} else {
		msg = flagName.ReplaceAllString(msg, "$1 --$2")
	}
	return UsageError(errors.New(msg))
}

// flagName finds the flag in the flag package's "invalid value" errors.
var flagName = regexp.MustCompile(`(for flag|for) -([A-Za-z][\w-]*)`)

// Version is the version the build stamped into the commands, which
// --version prints before the module's build information: `make image`
// and scripts/image set it with -ldflags "-X VersionVar=VERSION" (the
// output of git describe), so a binary built with -buildvcs=false, or
// from a source tree without git, still says which version it is. Empty
// in a plain go build, where the module's version (go install
// module@v1.2.3) or "(devel)" stands.
var Version string

// VersionVar is the linker's name of Version, for -ldflags -X.
const VersionVar = "github.com/tablejournal/tablejournal/cmd/internal/cli.Version"

// PrintVersion prints the version line of command name.
func PrintVersion(w io.Writer, name string) {
	bi, ok := debug.ReadBuildInfo()
	fmt.Fprintln(w, buildVersion(name, Version, bi, ok))
}

// buildVersion renders the version (stamped, else the module's) and the
// VCS revision the binary was built from, as the Go toolchain recorded
// them: "replay github.com/tablejournal/tablejournal v1.2.3 (rev
// 0123abcd, 2026-11-21T10:00:00Z) go1.26.8". A build from a work tree
// without a stamp is version (devel); with -buildvcs=false or outside
// git there is no revision.
func buildVersion(name, stamped string, bi *debug.BuildInfo, ok bool) string {
	if !ok || bi == nil {
		if stamped != "" {
			return name + " " + stamped + " (no build information)"
		}
		return name + " (no build information)"
	}
	version := bi.Main.Version
	if stamped != "" {
		version = stamped
	}
	if version == "" {
		version = "(devel)"
	}
	var rev, at string
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	vcs := "no vcs revision"
	if rev != "" {
		vcs = "rev " + rev
		if at != "" {
			vcs += ", " + at
		}
		if modified {
			vcs += ", modified"
		}
	}
	return fmt.Sprintf("%s %s %s (%s) %s", name, bi.Main.Path, version, vcs, bi.GoVersion)
}

// ParseArgs parses args into fs; on -h or --help it prints usage and the
// flags to stdout and returns flag.ErrHelp.
func ParseArgs(fs *flag.FlagSet, args []string, stdout io.Writer, usage string) error {
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		PrintHelp(stdout, usage, fs)
	}
	if err != nil {
		return FlagError(err)
	}
	return nil
}
