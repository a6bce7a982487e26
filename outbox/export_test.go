package outbox

// AppendRefused exposes the reading of why an append was not taken.
var AppendRefused = (*Service).appendRefused
