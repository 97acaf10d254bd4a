// `pt-snap view`'s file or directory, asked for from the first moment the page loads: its own
// wasm compiles and the app mounts meanwhile, then crates/pt-snap-web/src/served.rs opens
// each listed file exactly as a drop, by its URL: the file's worker streams it from the
// server as it decodes (www/read-worker.js), so nothing waits for the whole file first. Only
// on the URL the server printed (?token=…).
//
// window.ptSnapServed resolves to the server's list (`files?token=…`: kind file, directory
// or nothing, and each file's url, path, size and time). It rejects with {status, text} when
// the server refuses (a wrong token's 403, in its own words), with {network} when it does not
// answer, or with the error of a list that is not JSON.
// window.ptSnapEarlyWorker: the worker the file will go to (file_worker.rs).
(function () {
  var token = new URLSearchParams(location.search).get('token');
  if (!token) return;
  var served = fetch('files?token=' + encodeURIComponent(token)).then(
    function (r) {
      if (r.ok) return r.json();
      return r.text().then(function (text) { throw { status: r.status, text: text }; });
    },
    function (e) { throw { network: String((e && e.message) || e) }; });
  // served.rs reports a failure; it is no unhandled rejection before the app reads it.
  served.catch(function () {});
  window.ptSnapServed = served;
  // The file's worker, started now: its wasm compiles while the page's does. What it says
  // waits here, in order, until file_worker.rs takes it.
  var worker = new Worker('./pt-snap-worker_loader.js');
  var held = [];
  worker.onmessage = function (e) { held.push(e); };
  worker.onerror = function (e) { held.push(e); };
  window.ptSnapEarlyWorker = { worker: worker, held: held };
})();
