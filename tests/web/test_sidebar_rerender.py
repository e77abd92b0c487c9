"""Frontend 1.58 mounts a custom sidebar tab through a Vue function ref, so it calls the tab's render()
again with the same element whenever the sidebar re-renders (seen right after a preset changed a widget,
docs/frontend-check.md). The panel, and its undo, must survive that."""


def test_render_again_on_the_same_element_keeps_the_panel_and_its_undo(open_panel, server):
    page, errors = open_panel("/templates/text_to_video_wan.json")
    page.evaluate("() => { window.__firstPanel = document.querySelector('.headroom-panel'); }")
    page.click('.headroom-preset[data-preset="fp8-weights"] button')
    page.wait_for_selector(".headroom-undo")
    opened = len(server.routed("/headroom/panel"))
    page.evaluate("() => window.__comfy.tabs[0].render(document.getElementById('sidebar'))")
    assert page.evaluate("() => document.querySelector('.headroom-panel') === window.__firstPanel")
    assert page.text_content(".headroom-undo") == "Undo fp8-weights"
    page.wait_for_timeout(300)
    assert len(server.routed("/headroom/panel")) == opened, "a re-render posted the panel's opening again"
    # After destroy() (the tab closed), render() builds a fresh panel.
    page.evaluate("() => { window.__comfy.tabs[0].destroy(); window.__comfy.tabs[0].render(document.getElementById('sidebar')); }")
    page.wait_for_function("() => document.querySelector('.headroom-panel') !== window.__firstPanel")
    assert errors == []
