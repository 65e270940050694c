// Package console is the web console of tablejournal: the journal's
// history on one screen. It is one http.Handler (New) a service mounts in
// its own admin server, and what replay console and projector
// --console-addr serve.
//
// Its pages, each with a stable URL: the journal (commands from a sequence
// or a time, filtered, with their outcomes), a command (its blame), a
// row's history (100 versions a page, each with a field-by-field diff), a
// table or partition as of a point (stepping through the commands that
// changed it, and the diff between two points) and the projectors' health
// (shards, lag, rejections over time, held and behind partitions).
//
// Pages are server-rendered html/template with htmx for the parts that
// refresh; htmx (the npm package htmx.org, static/htmx.min.js, version in
// static/VERSION) and every template are embedded, so the console needs no
// network and go build needs no Node step. Charts are SVG drawn by the
// templates.
//
// One file per page, as riverui keeps one per endpoint: page_<name>.go
// registers its routes, parses its query, reads through the services
// bundle (services.go: the replay, journal and status packages the
// commands use, so the console keeps no copy of the row layout) and hands
// the replay packages' own types to its template, templates/<name>.html.
// Adding a page is those two files. Corrections, with AllowChanges, are the
// replay.Plan the replay packages return (page_repair.go). Without it the
// console changes nothing: every request but GET and HEAD, and the verify
// form, is refused.
package console
