// shapleig dashboard: refresh the page's <main> while the runs write, and sort tables by a column.
// Ships inside the package (no CDN, no library); the server's Content-Security-Policy allows this
// script only (by its hash), so nothing else on the page can run.
(function () {
  "use strict";
  var sortState = {}; // table id -> [column index, ascending]

  function cellKey(row, column) {
    var cell = row.cells[column];
    if (!cell) { return ""; }
    var key = cell.getAttribute("data-sort");
    if (key === null) { key = cell.textContent; }
    var number = parseFloat(key);
    return isNaN(number) ? key.toLowerCase() : number;
  }

  function sortTable(table, column, ascending) {
    var body = table.tBodies[0];
    if (!body) { return; }
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = cellKey(a, column), y = cellKey(b, column);
      if (typeof x !== typeof y) { x = String(x); y = String(y); }
      return (x < y ? -1 : x > y ? 1 : 0) * (ascending ? 1 : -1);
    });
    rows.forEach(function (row) { body.appendChild(row); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, k) {
      th.setAttribute("aria-sort", k === column ? (ascending ? "ascending" : "descending") : "none");
    });
  }

  function wireTables(root) {
    Array.prototype.forEach.call(root.querySelectorAll("table.sortable"), function (table) {
      if (!table.tHead) { return; }
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, column) {
        th.addEventListener("click", function () {
          var state = sortState[table.id];
          var ascending = !(state && state[0] === column && state[1]);
          sortState[table.id] = [column, ascending];
          sortTable(table, column, ascending);
        });
      });
      var state = sortState[table.id];
      if (state) { sortTable(table, state[0], state[1]); }
    });
  }

  function refresh(seconds) {
    var main = document.getElementById("main");
    var stamp = document.getElementById("updated");
    var request = new XMLHttpRequest();
    request.open("GET", window.location.pathname + "?part=main");
    request.onload = function () {
      if (request.status === 200) {
        main.innerHTML = request.responseText;
        wireTables(main);
        if (stamp) { stamp.textContent = new Date().toLocaleTimeString(); }
        document.body.setAttribute("data-refreshes", String(Number(document.body.getAttribute("data-refreshes") || 0) + 1));
      } else if (stamp) {
        stamp.textContent = "the dashboard answered " + request.status;
      }
      window.setTimeout(function () { refresh(seconds); }, seconds * 1000);
    };
    request.onerror = function () {  // the dashboard was stopped: say so, keep the last numbers
      if (stamp) { stamp.textContent = "the dashboard is not reachable; showing the last numbers"; }
      window.setTimeout(function () { refresh(seconds); }, seconds * 1000);
    };
    request.send();
  }

  document.addEventListener("DOMContentLoaded", function () {
    wireTables(document);
    var seconds = parseFloat(document.body.getAttribute("data-refresh") || "0");
    if (seconds > 0 && window.location.protocol !== "file:") {
      window.setTimeout(function () { refresh(seconds); }, seconds * 1000);
    }
  });
}());
