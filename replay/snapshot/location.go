package snapshot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/tablejournal/tablejournal/internal/azauth"
)

// Scheme prefixes a blob named against the table store's account.
const Scheme = "azblob://"

// Upload tuning: blocks of 8 MiB, four in flight, so a snapshot streams
// with at most 32 MiB buffered whatever its size.
const (
	BlockSize   = 8 << 20
	Concurrency = 4
)

// ErrLocation: a location that names no file or blob this package can
// reach (a malformed URL, azblob:// without an account). Checked with
// errors.Is.
var ErrLocation = errors.New("bad snapshot location")

// IsBlob reports whether loc names a blob rather than a local file.
func IsBlob(loc string) bool {
	return strings.HasPrefix(loc, Scheme) || strings.HasPrefix(loc, "https://") || strings.HasPrefix(loc, "http://")
}

// Recorded is the form of loc to record for later runs (the journal
// horizon of replay compact): a local file's absolute path, so that a run
// from another folder finds it; a blob as Describe renders it.
func Recorded(loc string) (string, error) {
	if IsBlob(loc) || loc == "-" {
		return Describe(loc), nil
	}
	abs, err := filepath.Abs(loc)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %v", ErrLocation, loc, err)
	}
	return abs, nil
}

// Describe renders loc for output and logs: a blob URL without its query
// (the SAS token is a secret).
func Describe(loc string) string {
	if !IsBlob(loc) || strings.HasPrefix(loc, Scheme) {
		return loc
	}
	u, err := url.Parse(loc)
	if err != nil {
		return "(a blob URL)"
	}
	u.RawQuery, u.User = "", nil
	return u.String()
}

// Writer is a snapshot being written: Commit makes it visible (the file
// renamed into place, the blob's block list committed), Abort discards it.
// After either, the Writer is done.
type Writer interface {
	io.Writer
	Commit() error
	Abort(cause error)
}

// Create starts writing the snapshot at loc: a local file path, a blob URL
// (carrying a SAS token, or bare to sign in), or
// azblob://<container>/<blob> in the account of tables, a table store
// connection string or bare URL. auth says how to authenticate to the
// blob service. A missing container is created.
func Create(ctx context.Context, loc, tables string, auth azauth.Config) (Writer, error) {
	if !IsBlob(loc) {
		return createFile(loc)
	}
	bb, cc, mode, err := blobClients(loc, tables, auth)
	if err != nil {
		return nil, err
	}
	if _, err := cc.Create(ctx, nil); err != nil && !bloberror.HasCode(err, bloberror.ContainerAlreadyExists,
		bloberror.AuthorizationPermissionMismatch, bloberror.AuthorizationFailure, bloberror.AuthorizationResourceTypeMismatch) {
		// A SAS for one blob may not create containers: the upload then
		// says whether the container exists.
		return nil, fmt.Errorf("create container of %s: %w", Describe(loc), azauth.ExplainError(err, mode, azauth.Blobs))
	}
	return createBlob(ctx, bb, loc, mode), nil
}

// Open reads the snapshot at loc (see Create), streamed.
func Open(ctx context.Context, loc, tables string, auth azauth.Config) (io.ReadCloser, error) {
	if !IsBlob(loc) {
		return os.Open(loc)
	}
	bb, _, mode, err := blobClients(loc, tables, auth)
	if err != nil {
		return nil, err
	}
	resp, err := bb.DownloadStream(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", Describe(loc), azauth.ExplainError(err, mode, azauth.Blobs))
	}
	return resp.Body, nil
}

// blobClients returns the clients of the blob loc names and of its
// container, and the mode they authenticate with.
func blobClients(loc, tables string, auth azauth.Config) (*blockblob.Client, *container.Client, azauth.Mode, error) {
	if strings.HasPrefix(loc, Scheme) {
		rest := strings.TrimPrefix(loc, Scheme)
		cont, name, ok := strings.Cut(rest, "/")
		if !ok || cont == "" || name == "" {
			return nil, nil, "", fmt.Errorf("%w: %s: want azblob://<container>/<blob>", ErrLocation, loc)
		}
		acct, err := accountOf(tables)
		if err != nil {
			return nil, nil, "", err
		}
		return acct.clients(cont, name, auth)
	}
	u, err := url.Parse(loc)
	if err != nil || u.Host == "" {
		return nil, nil, "", fmt.Errorf("%w: %s is not a blob URL", ErrLocation, Describe(loc))
	}
	parts, err := azblob.ParseURL(loc)
	if err != nil || parts.ContainerName == "" || parts.BlobName == "" {
		return nil, nil, "", fmt.Errorf("%w: %s names no container and blob", ErrLocation, Describe(loc))
	}
	mode, opts, err := blobOptions(auth, loc, false, u.RawQuery != "")
	if err != nil {
		return nil, nil, "", err
	}
	parts.BlobName = "" // the container's URL, with the SAS
	if mode == azauth.Login {
		bb, cc, err := signedInClients(auth, loc, parts.String(), opts)
		return bb, cc, mode, err
	}
	bb, err := blockblob.NewClientWithNoCredential(loc, &blockblob.ClientOptions{ClientOptions: opts})
	if err != nil {
		return nil, nil, "", fmt.Errorf("%w: %s: %v", ErrLocation, Describe(loc), err)
	}
	cc, err := container.NewClientWithNoCredential(parts.String(), &container.ClientOptions{ClientOptions: opts})
	if err != nil {
		return nil, nil, "", fmt.Errorf("%w: %s: %v", ErrLocation, Describe(loc), err)
	}
	return bb, cc, mode, nil
}

// fileWriter writes a local file through a temporary one renamed into
// place on Commit, so a failed snapshot leaves no partial file behind.
type fileWriter struct {
	*os.File
	path string
}

func createFile(path string) (Writer, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return nil, err
	}
	return &fileWriter{File: tmp, path: path}, nil
}

func (f *fileWriter) Commit() error {
	defer os.Remove(f.Name()) // a no-op once renamed
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), f.path)
}

func (f *fileWriter) Abort(error) {
	f.Close()
	os.Remove(f.Name())
}

// blobWriter streams what is written into a block blob: UploadStream reads
// it through a pipe, uploading blocks of BlockSize, Concurrency at once,
// and commits the block list only when the pipe closes without an error.
type blobWriter struct {
	pw   *io.PipeWriter
	done chan error
	loc  string
	mode azauth.Mode
}

func createBlob(ctx context.Context, bb *blockblob.Client, loc string, mode azauth.Mode) *blobWriter {
	pr, pw := io.Pipe()
	w := &blobWriter{pw: pw, done: make(chan error, 1), loc: loc, mode: mode}
	go func() {
		_, err := bb.UploadStream(ctx, pr, &blockblob.UploadStreamOptions{BlockSize: BlockSize, Concurrency: Concurrency})
		pr.CloseWithError(err) // a failed upload fails the writes too
		w.done <- err
	}()
	return w
}

func (w *blobWriter) Write(p []byte) (int, error) {
	n, err := w.pw.Write(p)
	if err != nil {
		return n, fmt.Errorf("write %s: %w", Describe(w.loc), azauth.ExplainError(err, w.mode, azauth.Blobs))
	}
	return n, nil
}

func (w *blobWriter) Commit() error {
	w.pw.Close()
	if err := <-w.done; err != nil {
		return fmt.Errorf("write %s: %w", Describe(w.loc), azauth.ExplainError(err, w.mode, azauth.Blobs))
	}
	return nil
}

func (w *blobWriter) Abort(cause error) {
	if cause == nil {
		cause = errors.New("aborted")
	}
	w.pw.CloseWithError(cause)
	<-w.done
}

// WriteAt writes a snapshot to loc (see Create) with write, visible only
// once complete: when write fails, no partial file or blob is left behind.
func WriteAt(ctx context.Context, loc, tables string, auth azauth.Config, write func(io.Writer) error) error {
	w, err := Create(ctx, loc, tables, auth)
	if err != nil {
		return err
	}
	if err := write(w); err != nil {
		w.Abort(err)
		return err
	}
	return w.Commit()
}

// CheckAt reads the snapshot at loc (see Open) through, as Check does.
func CheckAt(ctx context.Context, loc, tables string, auth azauth.Config) (Checked, error) {
	f, err := Open(ctx, loc, tables, auth)
	if err != nil {
		return Checked{}, err
	}
	defer f.Close()
	checked, err := Check(f)
	if err != nil {
		return checked, fmt.Errorf("%s: %w", Describe(loc), err)
	}
	return checked, nil
}
