"""Extraction of the program from LLM replies (string and ast processing only)."""

from csro.extract import extract_code

BODY = "class Agent:\n    def act(self, observation):\n        return 'ROCK'\n"


def test_fenced_block_with_prose_around_it():
    assert extract_code(f"Sure! Here it is:\n```python\n{BODY}```\nThis always plays rock.", "Agent").source == BODY


def test_the_block_defining_the_class_wins_over_other_blocks():
    text = f"```python\nprint('usage')\n```\nand the policy:\n```py\n{BODY}```\n```python\nclass Agent: pass\n```"
    assert extract_code(text, "Agent").source == BODY


def test_unterminated_block_keeps_its_complete_part():
    truncated = f"```python\n{BODY}\n    def helper(self):\n        return [1, 2,"
    assert extract_code(truncated, "Agent").source == BODY


def test_bare_code_after_a_sentence():
    assert extract_code(f"The policy follows.\n{BODY}\nThat is all, it plays ROCK.", "Agent").source == BODY


def test_main_guard_is_dropped():
    text = f"```python\n{BODY}\nif __name__ == '__main__':\n    print(Agent().act({{}}))\n```"
    assert extract_code(text, "Agent").source == BODY


def test_no_code_or_wrong_class_is_an_error():
    for text in ("I would play rock.", "", "```python\nclass Bot:\n    pass\n```"):
        extracted = extract_code(text, "Agent")
        assert extracted.source is None and extracted.error == "reply contains no Python code defining class Agent"


def test_programs_differing_in_layout_comments_or_docstrings_share_their_id():
    from csro.extract import program_id

    variant = ('"""A policy."""\n# always rock\nclass Agent:\n    """Rock."""\n\n    def act(self,observation) :\n'
               '        "Plays rock."\n        return "ROCK"   # the move\n')
    assert program_id(variant) == program_id(BODY)
    assert program_id(BODY.replace("ROCK", "PAPER")) != program_id(BODY)
    assert program_id(BODY + "    x = 1\n") != program_id(BODY)
    assert program_id("def (") == program_id("def (") != program_id("def  (")  # unparsable: the text itself


def test_a_replys_program_is_its_first_code_whatever_class_it_defines():
    from csro.extract import program_id, reply_program

    fenced = f"Here is my policy:\n```python\n{BODY}```\nIt plays rock.\n```python\nx = 2\n```"
    assert reply_program(fenced) == program_id(BODY) == reply_program(BODY)  # fenced or bare
    assert reply_program("```python\nclass Controller:\n    pass\n```") == program_id("class Controller:\n    pass\n")
    assert reply_program("```python\n" + BODY + "    def oops(self):\n") == program_id(BODY)  # truncated: cut
    assert reply_program("I cannot write that.") is None and reply_program("") is None
