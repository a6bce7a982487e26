// Live tail: follows the console's Server-Sent Events stream.
(function () {
  var list = document.getElementById("tail");
  if (!list) return;
  var state = document.getElementById("tail-state");
  var es = new EventSource(list.dataset.src);
  es.onopen = function () { state.textContent = "live"; };
  es.onerror = function () { state.textContent = "reconnecting…"; };
  es.addEventListener("message", function (ev) {
    var m = JSON.parse(ev.data);
    var text = (m.envelope && m.envelope.text) || "";
    var li = document.createElement("li");
    li.className = "tail-message";
    li.textContent = m.received_at + "  " + m.channel_type + "  " + m.conversation_id + "  " + text;
    list.insertBefore(li, list.firstChild);
  });
})();
