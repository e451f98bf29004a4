// Sorts and filters the findings table; the page reads the same without it.
// It only moves and hides existing rows: it never writes markup.
(function () {
  "use strict";
  var table = document.getElementById("findings-table");
  if (table) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var heads = table.tHead.rows[0].cells;
    var sortedBy = -1, dir = 1;
    var value = function (tr, i) {
      var td = tr.cells[i];
      return td.hasAttribute("data-v") ? td.getAttribute("data-v") : td.textContent;
    };
    var order = function (tr) { return Number(tr.getAttribute("data-order")); };
    Array.prototype.forEach.call(heads, function (th, i) {
      var kind = th.getAttribute("data-sort");
      if (!kind) { return; }
      var button = document.createElement("button");
      button.type = "button";
      button.className = "sort";
      while (th.firstChild) { button.appendChild(th.firstChild); }
      th.appendChild(button);
      button.addEventListener("click", function () {
        dir = sortedBy === i ? -dir : 1;
        sortedBy = i;
        var sorted = rows.slice().sort(function (a, b) {
          var x = value(a, i), y = value(b, i), c;
          if (kind === "num") { c = Number(x) - Number(y); } else { c = x < y ? -1 : x > y ? 1 : 0; }
          return dir * c || order(a) - order(b);
        });
        sorted.forEach(function (tr) { body.appendChild(tr); });
        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", dir > 0 ? "ascending" : "descending");
      });
    });
    var bar = document.createElement("div");
    bar.className = "filter";
    var input = document.createElement("input");
    input.type = "search";
    input.id = "filter";
    input.placeholder = "Filter rows: key, topic, input, stage…";
    input.setAttribute("aria-label", "Filter the records to replay");
    var count = document.createElement("span");
    bar.appendChild(input);
    bar.appendChild(count);
    table.parentNode.parentNode.insertBefore(bar, table.parentNode);
    input.addEventListener("input", function () {
      var q = input.value.toLowerCase(), shown = 0;
      rows.forEach(function (tr) {
        var hit = q === "" || tr.textContent.toLowerCase().indexOf(q) >= 0;
        tr.hidden = !hit;
        if (hit) { shown++; }
      });
      count.textContent = q === "" ? "" : shown + " of " + rows.length + " rows";
    });
  }
  document.documentElement.setAttribute("data-script", "ready");
})();
