package ociimage_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/tablejournal/tablejournal/deploy/deploytest"
	"github.com/tablejournal/tablejournal/deploy/ociimage"
	"github.com/tablejournal/tablejournal/journal/journaltest"
)

const (
	testVersion  = "v0.0.0-test"
	testRevision = "0123456789abcdef"
	testSource   = "https://example.invalid/tablejournal"
	testCreated  = "2026-11-27T12:00:00Z"
)

// layoutDir and archive are the OCI layout and the docker-archive that
// TestMain has `make image`'s program (scripts/image) write once:
// compiling and compressing are most of the package's time, and run
// there without the race detector.
var layoutDir, archive, binDir string

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "ociimage-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	if err := makeImage(tmp); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	layoutDir, archive = filepath.Join(tmp, "oci"), filepath.Join(tmp, ociimage.Repository+".tar")
	binDir = filepath.Join(tmp, "linux-"+runtime.GOARCH)
	return m.Run()
}

func makeImage(out string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	mod, err := deploytest.ModuleDir(ctx)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "go", "run", "./scripts/image", "-out", out, "-arch", runtime.GOARCH,
		"-version", testVersion, "-revision", testRevision, "-source", testSource, "-created", testCreated)
	cmd.Dir = mod
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go run ./scripts/image: %w\n%s", err, b)
	}
	return nil
}

// layoutImage reads the image back from the layout on disk, which must
// hold one image index, tagged testVersion, of the one architecture
// TestMain builds (the host's: make test builds one, see TestIndex).
func layoutImage(t *testing.T) v1.Image {
	t.Helper()
	root, err := layout.ImageIndexFromPath(layoutDir)
	if err != nil {
		t.Fatal(err)
	}
	im, err := root.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 {
		t.Fatalf("the layout's index lists %d manifests, want 1 (crane push takes no more)", len(im.Manifests))
	}
	d := im.Manifests[0]
	if tag := d.Annotations[ociimage.RefName]; tag != testVersion {
		t.Errorf("the layout's index is tagged %q, want %q", tag, testVersion)
	}
	if d.MediaType != types.OCIImageIndex {
		t.Fatalf("media type %s, want %s", d.MediaType, types.OCIImageIndex)
	}
	idx, err := root.ImageIndex(d.Digest)
	if err != nil {
		t.Fatal(err)
	}
	if im, err = idx.IndexManifest(); err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 {
		t.Fatalf("the image index lists %d images, want 1 (-arch %s)", len(im.Manifests), runtime.GOARCH)
	}
	d = im.Manifests[0]
	if p := d.Platform; p == nil || p.OS != "linux" || p.Architecture != runtime.GOARCH {
		t.Errorf("the index's image has platform %+v, want linux/%s", p, runtime.GOARCH)
	}
	if d.MediaType != types.OCIManifestSchema1 {
		t.Errorf("media type %s, want %s", d.MediaType, types.OCIManifestSchema1)
	}
	img, err := idx.Image(d.Digest)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// TestIndex: Index lists one image per architecture with its platform,
// as a pull on linux/arm64 picks it, and refuses two of one architecture.
// The images share the host's binaries (labelled with other
// architectures): compiling for a second architecture would double what
// make test spends building, and Compile is the one go build for every
// GOARCH.
func TestIndex(t *testing.T) {
	var imgs []v1.Image
	for _, arch := range []string{"amd64", "arm64"} {
		img, err := ociimage.Build(ociimage.Config{BinDir: binDir, Arch: arch, Version: testVersion})
		if err != nil {
			t.Fatal(err)
		}
		imgs = append(imgs, img)
	}
	idx, err := ociimage.Index(imgs...)
	if err != nil {
		t.Fatal(err)
	}
	if mt, err := idx.MediaType(); err != nil || mt != types.OCIImageIndex {
		t.Errorf("media type %s (%v), want %s", mt, err, types.OCIImageIndex)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for i, d := range im.Manifests {
		want, err := imgs[i].Digest()
		if err != nil {
			t.Fatal(err)
		}
		if d.Digest != want || d.Platform == nil {
			t.Fatalf("index entry %d: %s %+v, want image %s with a platform", i, d.Digest, d.Platform, want)
		}
		platforms = append(platforms, d.Platform.OS+"/"+d.Platform.Architecture)
	}
	if want := []string{"linux/amd64", "linux/arm64"}; !slices.Equal(platforms, want) {
		t.Errorf("platforms %v, want %v", platforms, want)
	}
	if _, err := ociimage.Index(imgs[0], imgs[0]); err == nil {
		t.Error("an index of two linux/amd64 images was accepted")
	}
}

// sizeTolerance is how far the image's sizes may stray from the figures
// docs/operating.md gives ("About N MB compressed, M MB unpacked") before
// the test asks for the docs to be corrected: the figures are rounded to
// the MB, and a Go release or a dependency moves them by a few per cent.
const sizeTolerance = 0.10

var docSizes = regexp.MustCompile(`About (\d+(?:\.\d+)?) MB compressed, (\d+(?:\.\d+)?) MB unpacked`)

// TestDocumentedSizes: the sizes docs/operating.md states are those of
// the image built, within sizeTolerance.
func TestDocumentedSizes(t *testing.T) {
	mod, err := deploytest.ModuleDir(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(mod, "docs", "operating.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := docSizes.FindSubmatch(doc)
	if m == nil {
		t.Fatalf("docs/operating.md states no size: want %q", docSizes)
	}
	compressed, uncompressed, err := ociimage.Sizes(layoutImage(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		what string
		doc  []byte
		got  int64
	}{{"compressed", m[1], compressed}, {"unpacked", m[2], uncompressed}} {
		docMB, err := strconv.ParseFloat(string(s.doc), 64)
		if err != nil {
			t.Fatal(err)
		}
		gotMB := float64(s.got) / 1e6
		if math.Abs(gotMB-docMB) > sizeTolerance*docMB {
			t.Errorf("%s: the image (linux/%s) is %.1f MB, docs/operating.md says %s MB: more than %.0f%% apart, correct the docs",
				s.what, runtime.GOARCH, gotMB, s.doc, 100*sizeTolerance)
		}
	}
}

// entry is one file of the image's filesystem.
type entry struct {
	hdr  *tar.Header
	body []byte
}

var layer struct {
	once  sync.Once
	files map[string]entry // by path without the leading /
	err   error
}

// filesystem is the files of the image's one layer, read from the
// layout's blob in one pass that also checks the blob's digest and size
// against the manifest and its uncompressed digest against the config's
// diff ID.
func filesystem(t *testing.T) map[string]entry {
	t.Helper()
	layer.once.Do(func() { layer.files, layer.err = readLayer(layoutImage(t)) })
	if layer.err != nil {
		t.Fatal(layer.err)
	}
	return layer.files
}

func readLayer(img v1.Image) (map[string]entry, error) {
	m, err := img.Manifest()
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	if len(m.Layers) != 1 || len(cf.RootFS.DiffIDs) != 1 {
		return nil, fmt.Errorf("%d layers, %d diff IDs; want one", len(m.Layers), len(cf.RootFS.DiffIDs))
	}
	d := m.Layers[0]
	if d.MediaType != types.OCILayer {
		return nil, fmt.Errorf("layer media type %s, want %s", d.MediaType, types.OCILayer)
	}
	f, err := os.Open(filepath.Join(layoutDir, "blobs", d.Digest.Algorithm, d.Digest.Hex))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	compressed, uncompressed := sha256.New(), sha256.New()
	zr, err := gzip.NewReader(io.TeeReader(f, compressed))
	if err != nil {
		return nil, err
	}
	tarStream := io.TeeReader(zr, uncompressed)
	files, err := readTar(tarStream)
	if err != nil {
		return nil, err
	}
	if _, err := io.Copy(io.Discard, tarStream); err != nil { // the tar's padding, gzip's trailer
		return nil, err
	}
	n, _ := f.Seek(0, io.SeekCurrent)
	if got := fmt.Sprintf("%x", compressed.Sum(nil)); got != d.Digest.Hex || n != d.Size {
		return nil, fmt.Errorf("layer blob: sha256 %s, %d bytes; the manifest says %s, %d", got, n, d.Digest.Hex, d.Size)
	}
	if got := fmt.Sprintf("%x", uncompressed.Sum(nil)); got != cf.RootFS.DiffIDs[0].Hex {
		return nil, fmt.Errorf("layer: diff ID sha256:%s, the config says %s", got, cf.RootFS.DiffIDs[0])
	}
	return files, nil
}

func readTar(r io.Reader) (map[string]entry, error) {
	files := map[string]entry{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, err
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		files[strings.TrimSuffix(strings.TrimPrefix(h.Name, "/"), "/")] = entry{h, body}
	}
}

// TestArchive: the docker-archive holds the layout's image under both
// tags.
func TestArchive(t *testing.T) {
	want, err := layoutImage(t).ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	for _, tag := range []string{testVersion, "latest"} {
		ref, err := name.NewTag(ociimage.Repository + ":" + tag)
		if err != nil {
			t.Fatal(err)
		}
		img, err := tarball.ImageFromPath(archive, &ref)
		if err != nil {
			t.Fatalf("%s: %v", ref, err)
		}
		got, err := img.ConfigName()
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s: config %s, the layout's is %s", ref, got, want)
		}
	}
}

// TestConfig: the image runs /projector as a non-root user, and says what
// it is.
func TestConfig(t *testing.T) {
	cf, err := layoutImage(t).ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	for _, tc := range []struct {
		what      string
		got, want any
	}{
		{"os", cf.OS, "linux"},
		{"architecture", cf.Architecture, runtime.GOARCH},
		{"user", c.User, "65532:65532"},
		{"entrypoint", c.Entrypoint, []string{"/projector"}},
		{"cmd", c.Cmd, []string(nil)},
		{"working dir", c.WorkingDir, "/"},
		{"env", c.Env, []string{"PATH=/"}},
		{"created", cf.Created.UTC().Format(time.RFC3339), testCreated},
		{"version label", c.Labels[ociimage.LabelVersion], testVersion},
		{"revision label", c.Labels[ociimage.LabelRevision], testRevision},
		{"source label", c.Labels[ociimage.LabelSource], testSource},
		{"created label", c.Labels[ociimage.LabelCreated], testCreated},
	} {
		if fmt.Sprint(tc.got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: %v, want %v", tc.what, tc.got, tc.want)
		}
	}
	if len(cf.History) != 1 || cf.History[0].Created.UTC().Format(time.RFC3339) != testCreated || cf.History[0].EmptyLayer {
		t.Errorf("history %+v, want one entry for the layer, created %s", cf.History, testCreated)
	}
	if strings.HasPrefix(c.User, "0") || strings.HasPrefix(c.User, "root") {
		t.Errorf("user %q is root", c.User)
	}
}

// TestFilesystem: the commands, static, the CA bundle of the machine that
// built, the user's passwd entry and /data; no shell, nothing else.
func TestFilesystem(t *testing.T) {
	fs := filesystem(t)
	var names []string
	for n := range fs {
		names = append(names, n)
	}
	slices.Sort(names)
	want := []string{"data", "etc", "etc/group", "etc/passwd", "etc/ssl", "etc/ssl/certs", "etc/ssl/certs/ca-certificates.crt", "projector", "replay", "writer"}
	if !slices.Equal(names, want) {
		t.Fatalf("files %v, want %v", names, want)
	}
	hostCA, err := os.ReadFile(ociimage.SystemCACerts)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fs["etc/ssl/certs/ca-certificates.crt"].body, hostCA) {
		t.Error("the image's CA bundle is not the build machine's")
	}
	if d := fs["data"].hdr; d.Uid != ociimage.UID || d.Typeflag != tar.TypeDir {
		t.Errorf("/data: uid %d type %c, want a folder of uid %d", d.Uid, d.Typeflag, ociimage.UID)
	}
	if !strings.Contains(string(fs["etc/passwd"].body), ":65532:65532:") {
		t.Errorf("/etc/passwd names no user 65532:\n%s", fs["etc/passwd"].body)
	}
	for _, c := range ociimage.Commands {
		e := fs[c]
		if e.hdr.Mode&0o111 == 0 || e.hdr.Mode&0o022 != 0 || e.hdr.Uid != 0 {
			t.Errorf("/%s: mode %o uid %d, want executable, owned by root (read-only to the user)", c, e.hdr.Mode, e.hdr.Uid)
		}
		assertStatic(t, c, e.body)
	}
}

// assertStatic fails unless bin is an ELF executable with no interpreter
// and no shared libraries: it runs in an image with nothing else.
func assertStatic(t *testing.T, name string, bin []byte) {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		t.Fatalf("/%s: %v", name, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("/%s is dynamically linked (%s)", name, p.Type)
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Errorf("/%s: shared libraries %v (%v)", name, libs, err)
	}
}

// TestEntrypointServesHealthz takes the entrypoint out of the image's
// layers and starts it as the image would, on embedded defaults in a
// temporary data folder: it answers /healthz, and stops cleanly on
// SIGTERM.
func TestEntrypointServesHealthz(t *testing.T) {
	img := layoutImage(t)
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	entrypoint := cf.Config.Entrypoint[0]
	e, ok := filesystem(t)[strings.TrimPrefix(entrypoint, "/")]
	if !ok {
		t.Fatalf("entrypoint %s is not in the image's layers", entrypoint)
	}
	bin := filepath.Join(t.TempDir(), filepath.Base(entrypoint))
	if err := os.WriteFile(bin, e.body, os.FileMode(e.hdr.Mode)); err != nil {
		t.Fatal(err)
	}

	p := deploytest.StartProjector(t, bin)
	ctx := journaltest.Context(t, time.Minute)
	p.WaitStatus(t, ctx, "/healthz", http.StatusOK)
	p.Stop(t, ctx)
	if !strings.Contains(p.Stderr.String(), "projector stopped") {
		t.Errorf("no shutdown line:\n%s", p.Stderr)
	}
}

// TestVersionStamped: every command in the image prints the version the
// image was built as (scripts/image stamps it with -ldflags -X), not the
// "(devel)" of a build without a module version.
func TestVersionStamped(t *testing.T) {
	files := filesystem(t)
	for _, name := range ociimage.Commands {
		e, ok := files[name]
		if !ok {
			t.Fatalf("/%s is not in the image", name)
		}
		bin := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(bin, e.body, 0o755); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(bin, "--version").Output()
		if err != nil {
			t.Fatalf("/%s --version: %v", name, err)
		}
		if want := name + " github.com/tablejournal/tablejournal " + testVersion + " ("; !strings.HasPrefix(string(out), want) {
			t.Errorf("/%s --version printed %q, want it to start %q", name, out, want)
		}
	}
}
