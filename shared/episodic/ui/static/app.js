// The viewer's only script: show or hide the edit form (everything else is plain forms and links).
document.addEventListener("DOMContentLoaded", () => {
  for (const button of document.querySelectorAll("[data-target]")) {
    button.addEventListener("click", () => {
      document.getElementById(button.dataset.target).classList.toggle("hidden");
    });
  }
});
