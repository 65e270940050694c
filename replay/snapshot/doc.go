// Package snapshot is the replay snapshot: a table exported consistent at a
// journal sequence ([Snapshots.Take]) and loaded back into a fresh table
// ([Snapshots.Load]), in the file format of format.go, checked through
// ([Check]); and the places a snapshot is written to and read from
// ([Create], [Open]): a local file, or a block blob in Azure Blob Storage
// named by a URL that carries a SAS token or by azblob://<container>/<blob>,
// resolved against the storage account of the table store's connection
// string (its BlobEndpoint, or the blob endpoint of its AccountName;
// Azurite's connection strings name both endpoints). A blob URL without a
// SAS token, or azblob:// against a bare table endpoint, signs in with
// Microsoft Entra ID as the azauth.Config given says.
//
// Blobs stream both ways: Create uploads what is written in blocks of
// BlockSize, Concurrency at once (azblob's UploadStream), so a snapshot of
// any size holds at most BlockSize × Concurrency in memory, and commits the
// block list only on Commit: an aborted snapshot leaves no blob, as a local
// file is renamed into place only when complete. A missing container is
// created. Open streams the blob's content.
package snapshot

import "github.com/tablejournal/tablejournal/replay"

// Snapshots takes and loads snapshots of the tables of a replay.Source. It
// is safe for concurrent use.
type Snapshots struct{ *replay.Source }

// New returns the Snapshots of src.
func New(src *replay.Source) *Snapshots { return &Snapshots{src} }
