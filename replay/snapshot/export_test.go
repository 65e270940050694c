package snapshot

import "github.com/tablejournal/tablejournal/internal/azurite"

// AzuriteOfTest returns the Azurite of the test binary, which TestMain
// (main_test.go, through replaytest) starts.
var AzuriteOfTest func() *azurite.Server
