package ociimage

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// What the image is: its repository name (the name the manifests in
// deploy/ use and the docker-archive is tagged with), the commands it
// holds, each at /NAME, and the user it runs as.
const (
	Repository = "tablejournal"
	Entrypoint = "/projector"
	UID        = 65532
	User       = "65532:65532"
	// SystemCACerts is where Debian and its kin keep the CA bundle, and
	// where the image keeps it: one of the places Go's crypto/x509 reads
	// on Linux.
	SystemCACerts = "/etc/ssl/certs/ca-certificates.crt"
	// DataDir is the default --data of a command started in the image (its
	// working directory is /), owned by the image's user.
	DataDir = "/data"
)

// Commands are the commands the image holds, each at /NAME; the first is
// the entrypoint.
var Commands = []string{"projector", "writer", "replay"}

// OCI annotation keys of the image's labels and of a layout's tags.
const (
	LabelSource   = "org.opencontainers.image.source"
	LabelVersion  = "org.opencontainers.image.version"
	LabelRevision = "org.opencontainers.image.revision"
	LabelCreated  = "org.opencontainers.image.created"
	LabelTitle    = "org.opencontainers.image.title"
	RefName       = "org.opencontainers.image.ref.name"
)

// VersionVar is the variable the commands' --version prints
// (cmd/internal/cli.Version, which this package cannot import), set
// with -ldflags -X.
const VersionVar = "github.com/tablejournal/tablejournal/cmd/internal/cli.Version"

// Compile builds the commands (default all of Commands) from the module in
// moduleDir as static Linux binaries for goarch (default the host's) into
// dir, named after the commands: CGO_ENABLED=0 (the embedded store is pure
// Go), -trimpath, symbols and DWARF stripped, and version (if not empty)
// stamped into VersionVar, so --version prints it even when the build
// records no VCS information.
func Compile(ctx context.Context, moduleDir, dir, goarch, version string, commands ...string) error {
	if len(commands) == 0 {
		commands = Commands
	}
	ldflags := "-ldflags=-s -w"
	if version != "" {
		if strings.ContainsFunc(version, func(r rune) bool { return r <= ' ' || r == '\'' || r == '"' || r == 0x7f }) {
			return fmt.Errorf("ociimage: version %q has spaces, quotes or control characters", version)
		}
		ldflags += " -X " + VersionVar + "=" + version
	}
	args := []string{"build", "-trimpath", ldflags, "-o", dir + string(filepath.Separator)}
	for _, c := range commands {
		args = append(args, "./cmd/"+c)
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = moduleDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if goarch != "" {
		cmd.Env = append(cmd.Env, "GOARCH="+goarch)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %v: %w\n%s", args, err, out)
	}
	return nil
}

// Config is what Build puts into the image.
type Config struct {
	// BinDir holds the Commands' binaries, as Compile leaves them.
	BinDir string
	// CACerts is the CA bundle copied into the image. If empty,
	// SystemCACerts of the machine that builds.
	CACerts string
	// Arch is the binaries' GOARCH. If empty, the host's, as Compile's.
	Arch string
	// Version, Revision and Source become the image's labels; Version
	// is required.
	Version, Revision, Source string
	// Created is the image's creation time and every file's modification
	// time: the commit's time makes the image reproducible. If zero, the
	// Unix epoch.
	Created time.Time
}

// Validate reports every problem of the config at once.
func (c Config) Validate() error {
	var errs []error
	if c.BinDir == "" {
		errs = append(errs, errors.New("ociimage: no BinDir"))
	}
	if c.Version == "" {
		errs = append(errs, errors.New("ociimage: no Version"))
	}
	return errors.Join(errs...)
}

// Build builds the image: one layer over scratch holding the commands, the
// CA bundle, /etc/passwd and /etc/group naming the user, and /data owned
// by it; config with User, Entrypoint, WorkingDir / and PATH=/ (so the
// other commands run by name: a Kubernetes command: ["replay"]).
func Build(c Config) (v1.Image, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if c.CACerts == "" {
		c.CACerts = SystemCACerts
	}
	if c.Arch == "" {
		c.Arch = runtime.GOARCH
	}
	created := c.Created.UTC().Truncate(time.Second)
	if c.Created.IsZero() {
		created = time.Unix(0, 0).UTC()
	}
	files, err := c.files()
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return layerTar(files, created), nil },
		tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
	if err != nil {
		return nil, fmt.Errorf("ociimage: layer: %w", err)
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{Layer: layer, History: v1.History{
		Created:   v1.Time{Time: created},
		CreatedBy: "make image: " + strings.Join(Commands, ", ") + ", CA certificates, user " + User,
	}})
	if err != nil {
		return nil, fmt.Errorf("ociimage: layer: %w", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("ociimage: config: %w", err)
	}
	cfg = cfg.DeepCopy()
	cfg.Architecture, cfg.OS, cfg.Created = c.Arch, "linux", v1.Time{Time: created}
	cfg.Config = v1.Config{
		User:       User,
		Entrypoint: []string{Entrypoint},
		WorkingDir: "/",
		Env:        []string{"PATH=/"},
		Labels:     c.labels(created),
	}
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, fmt.Errorf("ociimage: config: %w", err)
	}
	return img, nil
}

func (c Config) labels(created time.Time) map[string]string {
	l := map[string]string{
		LabelTitle:   Repository,
		LabelVersion: c.Version,
		LabelCreated: created.Format(time.RFC3339),
	}
	if c.Source != "" {
		l[LabelSource] = c.Source
	}
	if c.Revision != "" {
		l[LabelRevision] = c.Revision
	}
	return l
}

// file is one entry of the layer: a directory when from and body are
// both empty.
type file struct {
	name     string // without a leading /
	mode     int64
	uid      int
	from     string // copied from this file
	body     []byte // or this content
	isDir    bool
	fileSize int64
}

// files is the layer's file list, in the order written, checked to exist.
func (c Config) files() ([]file, error) {
	id := strconv.Itoa(UID)
	fs := []file{
		{name: "etc/", mode: 0o755, isDir: true},
		{name: "etc/passwd", mode: 0o644, body: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:" + id + ":" + id + ":nonroot:/home/nonroot:/sbin/nologin\n")},
		{name: "etc/group", mode: 0o644, body: []byte("root:x:0:\nnonroot:x:" + id + ":\n")},
		{name: "etc/ssl/", mode: 0o755, isDir: true},
		{name: "etc/ssl/certs/", mode: 0o755, isDir: true},
		{name: SystemCACerts[1:], mode: 0o644, from: c.CACerts},
		{name: DataDir[1:] + "/", mode: 0o755, uid: UID, isDir: true},
	}
	for _, name := range Commands {
		fs = append(fs, file{name: name, mode: 0o755, from: filepath.Join(c.BinDir, name)})
	}
	for i, f := range fs {
		if f.from == "" {
			fs[i].fileSize = int64(len(f.body))
			continue
		}
		st, err := os.Stat(f.from)
		if err != nil {
			return nil, fmt.Errorf("ociimage: %w", err)
		}
		if !st.Mode().IsRegular() {
			return nil, fmt.Errorf("ociimage: %s is not a regular file", f.from)
		}
		fs[i].fileSize = st.Size()
	}
	return fs, nil
}

// layerTar streams the layer's tar: the same bytes every time it is
// opened, as go-containerregistry opens it once for the digest of the
// compressed layer and once for the uncompressed one.
func layerTar(files []file, mtime time.Time) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeTar(pw, files, mtime)) }()
	return pr
}

func writeTar(w io.Writer, files []file, mtime time.Time) error {
	tw := tar.NewWriter(w)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, Uid: f.uid, Gid: f.uid, ModTime: mtime}
		if f.isDir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, f.fileSize
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if err := copyContent(tw, f); err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
	}
	return tw.Close()
}

func copyContent(w io.Writer, f file) error {
	switch {
	case f.isDir:
		return nil
	case f.from == "":
		_, err := w.Write(f.body)
		return err
	}
	in, err := os.Open(f.from)
	if err != nil {
		return err
	}
	defer in.Close()
	// A file that changed size since files() fails the tar writer.
	_, err = io.Copy(w, in)
	return err
}
