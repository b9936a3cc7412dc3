"""Grading machinery: math-verify in killable helper processes (:mod:`~ddrl.grading.grader_pool`, the slow half of
:func:`ddrl.answers.is_equivalent`) and Program-of-Thought evaluation without ``exec`` (:mod:`~ddrl.grading.pot_eval`)."""
