// Package azurite starts a real Azurite table server (the Azure Tables
// emulator from the npm package azurite) for tests and local development.
//
// The binary is found through the TABLEJOURNAL_AZURITE environment variable,
// which the Makefile sets to the pinned install under .tools/azurite, or else
// by looking for .tools/azurite/node_modules/.bin/azurite-table in the working
// directory and its parents. When neither exists, Start fails and says to run
// `make azurite`: tests that need Azurite fail loudly rather than skip.
//
// A test binary starts one server from TestMain with Run:
//
//	var srv *azurite.Server
//
//	func TestMain(m *testing.M) { os.Exit(azurite.Run(m, &srv)) }
//
// The server keeps everything in memory (--inMemoryPersistence), listens on a
// free loopback port and is stopped when the tests end.
package azurite
